package statusview

import (
	"cmp"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
)

// ForAppConfig is the view of an AppConfig from its own status (Ready, the rendered workloads) and the
// ManifestWorks delivering it, in any order. The manifests counted on each cluster are those of the
// workloads and traits the AppConfig renders now, as in the hub's HEALTHY count.
func ForAppConfig(app *v1alpha2.ApplicationConfiguration, works []workv1.ManifestWork) AppConfig {
	a := AppConfig{Namespace: app.Namespace, Name: app.Name, Ready: metav1.ConditionUnknown, Clusters: []Work{}}
	switch ready := meta.FindStatusCondition(app.Status.Conditions, hub.ConditionReady); {
	case ready == nil:
		a.ReadyMessage = "the hub has not rendered the AppConfig yet"
	case ready.ObservedGeneration != app.Generation:
		a.ReadyMessage = fmt.Sprintf("the hub has not rendered generation %d of the AppConfig yet", app.Generation)
	default:
		a.Ready = ready.Status
		if ready.Status != metav1.ConditionTrue {
			a.ReadyMessage = ready.Message
		}
	}
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
