package v1alpha2

import (
	"strconv"

	workv1 "open-cluster-management.io/api/work/v1"
)

// CurrentObjects are the kind/name of the workloads and traits an AppConfig renders now: the objects
// whose reports count towards its clusters' Applied, Available and health (a rollout's earlier
// revisions do not). The hub's status and `kubectl ferry` both use it.
func CurrentObjects(workloads []WorkloadStatus) map[string]bool {
	out := map[string]bool{}
	for _, w := range workloads {
		out[w.Reference.Kind+"/"+w.Reference.Name] = true
		for _, t := range w.Traits {
			out[t.Reference.Kind+"/"+t.Reference.Name] = true
		}
	}
	return out
}

// FeedbackValueOf is an agent's status feedback value as text, the way a person reads it.
func FeedbackValueOf(v workv1.FeedbackValue) FeedbackValue {
	out := FeedbackValue{Name: v.Name}
	switch f := v.Value; {
	case f.Integer != nil:
		out.Value = strconv.FormatInt(*f.Integer, 10)
	case f.String != nil:
		out.Value = *f.String
	case f.Boolean != nil:
		out.Value = strconv.FormatBool(*f.Boolean)
	case f.JsonRaw != nil:
		out.Value = *f.JsonRaw
	}
	return out
}
