package apply

import "context"

// applyOnceStrategy is apply-once (--apply-once-only on, and force without re-creating). The manifest is applied (as Update does) when it
// differs from the one last applied to the object — for OAM-rendered objects, exactly when the
// app.oam.dev/generation annotation or the app.oam.dev/revision label changed — and left alone
// otherwise, so that changes made on the cluster survive. A missing object is re-created, except with
// force when the caller's record says this very manifest was applied already: it was deleted on
// purpose, and stays deleted until the manifest changes.
type applyOnceStrategy struct{ force bool }

func (s applyOnceStrategy) apply(ctx context.Context, r *request) (Result, error) {
	res := r.result
	switch {
	case r.current == nil && s.force && r.opts.AppliedHash == res.Hash:
		res.Operation = Skipped
		res.Message = "deleted on the cluster after it was applied; ApplyOnceForce re-creates it only when the manifest changes"
		return res, nil
	case r.current != nil && AppliedHash(r.current.GetAnnotations()) == res.Hash:
		res.Object, res.Operation = r.current, Skipped
		res.Message = "applied once already; changes made on the cluster are kept until the manifest changes"
		return res, nil
	}
	return updateStrategy{}.apply(ctx, r)
}
