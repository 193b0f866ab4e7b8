package hub

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// The AppConfig a ManifestWork's name belongs to is found back from the name alone, also for an
// AppConfig whose name has dots; names Ferry does not give map to none.
func TestAppConfigOfWorkNameInvertsManifestWorkName(t *testing.T) {
	for _, app := range []types.NamespacedName{{Namespace: "shop", Name: "web"}, {Namespace: "t-1", Name: "a.b.c"}} {
		name := ManifestWorkName(&v1alpha2.ApplicationConfiguration{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name}})
		if got, ok := appConfigOfWorkName(name); !ok || got != app {
			t.Errorf("appConfigOfWorkName(%q) = %v, %v; want %v", name, got, ok, app)
		}
	}
	for _, name := range []string{"hello", ".web", "shop."} {
		if got, ok := appConfigOfWorkName(name); ok {
			t.Errorf("appConfigOfWorkName(%q) = %v; want none", name, got)
		}
	}
}

// A ManagedCluster's changes that move placements pass (its labels, the start of its deletion); its
// status reports do not.
func TestPlacementChangedPassesLabelsAndDeletionOnly(t *testing.T) {
	base := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "east", Labels: map[string]string{"env": "prod"}}}
	relabelled := base.DeepCopy()
	relabelled.Labels["env"] = "dev"
	deleting := base.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{}
	deleting.Finalizers = []string{"hold"}
	reported := base.DeepCopy()
	reported.Status.Conditions = []metav1.Condition{{Type: "ManagedClusterConditionAvailable", Status: metav1.ConditionTrue}}
	for _, tc := range []struct {
		name string
		new  *clusterv1.ManagedCluster
		want bool
	}{
		{"labels changed", relabelled, true},
		{"deletion started", deleting, true},
		{"status reported", reported, false},
	} {
		if got := placementChanged.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: passed = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Overrides read a cluster's annotations and ClusterClaims besides its labels: a change of either renders
// the cluster again; its conditions do not.
func TestClusterFactsChangedPassesAnnotationsAndClaimsOnly(t *testing.T) {
	base := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "east", Annotations: map[string]string{"team": "a"}}}
	base.Status.ClusterClaims = []clusterv1.ManagedClusterClaim{{Name: "id.k8s.io", Value: "1"}}
	annotated := base.DeepCopy()
	annotated.Annotations["team"] = "b"
	claimed := base.DeepCopy()
	claimed.Status.ClusterClaims[0].Value = "2"
	reported := base.DeepCopy()
	reported.Status.Conditions = []metav1.Condition{{Type: "ManagedClusterConditionAvailable", Status: metav1.ConditionTrue}}
	for _, tc := range []struct {
		name string
		new  *clusterv1.ManagedCluster
		want bool
	}{
		{"annotation changed", annotated, true},
		{"claim changed", claimed, true},
		{"status reported", reported, false},
	} {
		if got := clusterFactsChanged.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: passed = %v, want %v", tc.name, got, tc.want)
		}
	}
}
