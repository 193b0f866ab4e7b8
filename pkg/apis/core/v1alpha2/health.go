package v1alpha2

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The manifest conditions health is read from, as OCM's work API names them (workv1.ManifestProgressing
// and workv1.ManifestDegraded) and Ferry's agent sets them.
const (
	manifestProgressing = "Progressing"
	manifestDegraded    = "Degraded"
)

// ManifestHealth is what a ManifestWork manifest's Progressing and Degraded conditions about the work's
// generation gen say, and the condition that makes it unhealthy (nil when Healthy or not reported).
// The hub's AppConfig status and `kubectl ferry` both read health with it, so they never disagree.
func ManifestHealth(conds []metav1.Condition, gen int64) (Health, *metav1.Condition) {
	current := func(typ string) *metav1.Condition {
		c := meta.FindStatusCondition(conds, typ)
		if c == nil || c.ObservedGeneration != gen {
			return nil
		}
		return c
	}
	degraded, progressing := current(manifestDegraded), current(manifestProgressing)
	switch {
	case degraded != nil && degraded.Status == metav1.ConditionTrue:
		return Degraded, degraded
	case progressing != nil && progressing.Status == metav1.ConditionTrue:
		return Progressing, progressing
	case degraded != nil && progressing != nil && degraded.Status == metav1.ConditionFalse && progressing.Status == metav1.ConditionFalse:
		return Healthy, nil
	}
	return HealthUnknown, nil
}

// AggregateHealth is the health of several objects: Degraded when any is, else Progressing when any is,
// Healthy when all are (and there is one), else Unknown.
func AggregateHealth(hs []Health) Health {
	switch {
	case len(hs) == 0:
		return HealthUnknown
	case slices.Contains(hs, Degraded):
		return Degraded
	case slices.Contains(hs, Progressing):
		return Progressing
	case slices.Contains(hs, HealthUnknown):
		return HealthUnknown
	}
	return Healthy
}
