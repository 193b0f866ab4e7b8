package hub_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
	"github.com/ferry-mc/ferry/pkg/render"
)

// Placement by names, by selector and by an OCM Placement's decisions, limited to clusters that exist.
func TestTargetClustersFollowThePlacement(t *testing.T) {
	f := setup(t)
	// ManagedClusters of this test only (the hub is shared): names and label key made unique.
	key := "ferry.io/test-" + f.ns
	east, west, lab := "east-"+f.ns, "west-"+f.ns, "lab-"+f.ns
	for name, env := range map[string]string{east: "prod", west: "prod", lab: "dev"} {
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{key: env}}}
		f.mustCreate(f.hub, mc)
		t.Cleanup(func() {
			if err := f.hub.Delete(context.Background(), mc); client.IgnoreNotFound(err) != nil {
				t.Errorf("delete ManagedCluster %s: %v", mc.Name, err)
			}
		})
	}
	f.setDecisions("canary", "canary-1", lab, "gone")

	cases := []struct {
		name      string
		placement *v1alpha2.Placement
		want      []string
	}{
		{"no placement", nil, nil},
		{"names, of which one does not exist", &v1alpha2.Placement{Clusters: []string{west, "nowhere", east}}, []string{east, west}},
		{"selector", &v1alpha2.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{key: "prod"}}}, []string{east, west}},
		{"placement decisions", &v1alpha2.Placement{PlacementRef: &v1alpha2.PlacementRef{Name: "canary"}}, []string{lab}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			app := &v1alpha2.ApplicationConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: f.ns},
				Spec: v1alpha2.ApplicationConfigurationSpec{Placement: tc.placement}}
			got, err := hub.TargetClusters(t.Context(), f.hub, hub.ListedClusters(f.hub), app)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("clusters = %v, want %v", got, tc.want)
			}
		})
	}
}

// setDecisions creates or updates the PlacementDecision name of the Placement placement, in the test's
// namespace, to decide for clusters — what OCM's placement controller does on a hub.
func (f *fixture) setDecisions(placement, name string, clusters ...string) {
	f.t.Helper()
	var decisions []clusterv1beta1.ClusterDecision
	for _, c := range clusters {
		decisions = append(decisions, clusterv1beta1.ClusterDecision{ClusterName: c, Reason: "test"})
	}
	f.eventually("PlacementDecision "+name+" decides "+placement+" for "+fmt.Sprint(clusters), func(ctx context.Context) (bool, error) {
		d := &clusterv1beta1.PlacementDecision{}
		err := f.hub.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, d)
		if client.IgnoreNotFound(err) != nil {
			return false, err
		}
		if err != nil {
			d = &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns,
				Labels: map[string]string{clusterv1beta1.PlacementLabel: placement}}}
			if err := f.hub.Create(ctx, d); err != nil {
				return false, err
			}
		}
		d.Status.Decisions = decisions
		return true, f.hub.Status().Update(ctx, d)
	})
}

// Placement by names: the AppConfig reaches the named clusters that exist; editing the list moves it
// (the ManifestWork of the cluster that left is deleted and its objects removed from that spoke).
func TestPlacementByNamesDeliversToTheNamedClusters(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	f.createApp(f.appConfig("shop", onClusters("cluster1", "nowhere"), shopEntry()))
	f.waitDelivered("shop", "cluster1")
	f.waitShopOn("cluster1", "nginx:2")
	if works, err := f.works(t.Context(), "shop"); err != nil || len(works) != 1 {
		t.Errorf("%d ManifestWorks (error %v), want one, for cluster1", len(works), err)
	}

	f.updateApp("shop", func(app *v1alpha2.ApplicationConfiguration) { app.Spec.Placement = onClusters("cluster2") })
	f.waitShopOn("cluster2", "nginx:2")
	f.waitWorkGone("cluster1", "shop")
	f.waitShopGone("cluster1")
	f.waitDelivered("shop", "cluster2")
}

// Placement by an OCM Placement: the AppConfig follows the decisions of its PlacementDecisions (OCM
// spreads the decisions of a large placement over several), moving when they change.
func TestPlacementByOCMPlacementFollowsItsDecisions(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub,
		&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "canary", Namespace: f.ns}},
		// Another Placement's decision, which the AppConfig must not follow.
		&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: f.ns}})
	f.setDecisions("canary", "canary-decision-1", "cluster2")
	f.setDecisions("other", "other-decision-1", "cluster1")
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	f.createApp(f.appConfig("shop", &v1alpha2.Placement{PlacementRef: &v1alpha2.PlacementRef{Name: "canary"}}, shopEntry()))
	f.waitDelivered("shop", "cluster2")
	f.waitShopOn("cluster2", "nginx:2")

	// The placement moves to cluster1.
	f.setDecisions("canary", "canary-decision-1", "cluster1")
	f.waitShopOn("cluster1", "nginx:2")
	f.waitWorkGone("cluster2", "shop")
	f.waitShopGone("cluster2")
	f.waitDelivered("shop", "cluster1")

	// A second decision of the same placement adds cluster2.
	f.setDecisions("canary", "canary-decision-2", "cluster2")
	f.waitShopOn("cluster2", "nginx:2")
	f.waitDelivered("shop", clusters...)
}
