package apply

import "context"

// createOnlyStrategy creates a missing object and never writes to an existing one, whatever the
// manifest says now: the cluster's admins and controllers own it once it exists.
type createOnlyStrategy struct{}

func (createOnlyStrategy) apply(ctx context.Context, r *request) (Result, error) {
	if r.current != nil {
		res := r.result
		res.Object, res.Operation = r.current, Unchanged
		return res, nil
	}
	rec, err := newRecord(r.desired, r.storeKey(), r.store)
	if err != nil {
		return Result{}, err
	}
	return create(ctx, r, rec)
}
