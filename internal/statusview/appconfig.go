package statusview

import (
	"cmp"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// ForAppConfig is the view of an AppConfig from its own status (Ready, ClustersBound, the rendered
// workloads, drift) and the ManifestWorks delivering it, in any order. The manifests counted on each cluster
// are those of the workloads and traits the AppConfig renders now, as in the hub's HEALTHY count.
func ForAppConfig(app *v1alpha2.ApplicationConfiguration, works []workv1.ManifestWork) AppConfig {
	a := AppConfig{Namespace: app.Namespace, Name: app.Name, Clusters: []Work{}}
	a.Ready, a.ReadyMessage = readyOf(app)
	a.NotBound = notBoundOf(app)
	a.Drift = app.Status.Drift.DeepCopy()
	current := v1alpha2.CurrentObjects(app.Status.Workloads)
	sorted := slices.Clone(works)
	slices.SortFunc(sorted, func(x, y workv1.ManifestWork) int {
		return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Name, y.Name))
	})
	for i := range sorted {
		a.Clusters = append(a.Clusters, workView(&sorted[i], current))
	}
	a.Healthy = len(a.Problems()) == 0
	return a
}

// readyOf is the status of app's Ready condition and, when it is not True, why: Unknown while the hub
// has not looked at app's current generation.
func readyOf(app *v1alpha2.ApplicationConfiguration) (metav1.ConditionStatus, string) {
	switch ready := meta.FindStatusCondition(app.Status.Conditions, v1alpha2.ConditionReady); {
	case ready == nil:
		return metav1.ConditionUnknown, "the hub has not rendered the AppConfig yet"
	case ready.ObservedGeneration != app.Generation:
		return metav1.ConditionUnknown, fmt.Sprintf("the hub has not rendered generation %d of the AppConfig yet", app.Generation)
	case ready.Status != metav1.ConditionTrue:
		return ready.Status, ready.Message
	}
	return metav1.ConditionTrue, ""
}

// notBoundOf is app's ClustersBound condition when it is False, with the refused clusters of
// status.placement; nil otherwise.
func notBoundOf(app *v1alpha2.ApplicationConfiguration) *NotBound {
	bound := meta.FindStatusCondition(app.Status.Conditions, v1alpha2.ConditionClustersBound)
	if bound == nil || bound.Status != metav1.ConditionFalse {
		return nil
	}
	nb := &NotBound{Reason: bound.Reason, Message: bound.Message, Refused: []string{}}
	if p := app.Status.Placement; p != nil {
		nb.Refused = append(nb.Refused, p.Refused...)
		nb.RefusedClusters = max(p.RefusedClusters, int32(len(p.Refused)))
	}
	return nb
}
