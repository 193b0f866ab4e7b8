package apply

import "context"

// readOnlyStrategy never writes: it reports the object as it is, or no object when it does not exist,
// and, asked to (Options.ReportDiff), what applying the manifest would change on it.
type readOnlyStrategy struct{}

func (readOnlyStrategy) apply(_ context.Context, r *request) (Result, error) {
	res := r.result
	res.Object, res.Operation = r.current, Unchanged
	if r.current == nil {
		res.Operation, res.Message = Skipped, "the object does not exist and ReadOnly does not create it"
	}
	if r.opts.ReportDiff {
		res.Diff = computeDiff(r.current, r.desired)
	}
	return res, nil
}
