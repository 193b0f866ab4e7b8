package hub_test

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/internal/localcluster"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
)

// Placement by names, by selector and by an OCM Placement's decisions, limited to clusters that exist.
func TestTargetClustersFollowThePlacement(t *testing.T) {
	env := localcluster.StartForTest(t, localcluster.Options{})
	scheme, err := hub.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Hub.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	for name, env := range map[string]string{"east": "prod", "west": "prod", "lab": "dev"} {
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"env": env}}}
		if err := c.Create(t.Context(), mc); err != nil {
			t.Fatal(err)
		}
	}
	decision := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{
		Name: "canary-1", Namespace: "default", Labels: map[string]string{clusterv1beta1.PlacementLabel: "canary"}}}
	if err := c.Create(t.Context(), decision); err != nil {
		t.Fatal(err)
	}
	decision.Status.Decisions = []clusterv1beta1.ClusterDecision{{ClusterName: "lab"}, {ClusterName: "gone"}}
	if err := c.Status().Update(t.Context(), decision); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name      string
		placement *v1alpha2.Placement
		want      []string
	}{
		{"no placement", nil, nil},
		{"names, of which one does not exist", &v1alpha2.Placement{Clusters: []string{"west", "nowhere", "east"}}, []string{"east", "west"}},
		{"selector", &v1alpha2.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}, []string{"east", "west"}},
		{"placement decisions", &v1alpha2.Placement{PlacementRef: &v1alpha2.PlacementRef{Name: "canary"}}, []string{"lab"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			app := &v1alpha2.ApplicationConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default"},
				Spec: v1alpha2.ApplicationConfigurationSpec{Placement: tc.placement}}
			got, err := hub.TargetClusters(t.Context(), c, app)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("clusters = %v, want %v", got, tc.want)
			}
		})
	}
}
