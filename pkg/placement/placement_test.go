package placement

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// Where a placement reaches, and why each other cluster is left out: by names, by selector and by an
// OCM Placement's decisions; a named cluster without a ManagedCluster, one being deleted, one outside
// the bound sets (delivered to all the same when the bindings are only audited); and what Select
// returns is exactly the clusters Explain places that are not being deleted.
func TestExplainSaysWhereThePlacementReachesAndWhy(t *testing.T) {
	now := metav1.Now()
	cluster := func(name, set, env string) *clusterv1.ManagedCluster {
		return &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{clusterv1beta2.ClusterSetLabel: set, "env": env}}}
	}
	leaving := cluster("leaving", "team-a", "prod")
	leaving.DeletionTimestamp, leaving.Finalizers = &now, []string{"test"}
	// Listed in no particular order, as a cache lists them.
	clusters := []*clusterv1.ManagedCluster{cluster("west", "team-a", "prod"), cluster("lab", "team-a", "dev"), leaving,
		cluster("east", "team-a", "prod"), cluster("other", "team-b", "prod")}
	decisions := []clusterv1beta1.PlacementDecision{
		{Status: clusterv1beta1.PlacementDecisionStatus{Decisions: []clusterv1beta1.ClusterDecision{{ClusterName: "lab"}, {ClusterName: "ghost"}}}},
		{Status: clusterv1beta1.PlacementDecisionStatus{Decisions: []clusterv1beta1.ClusterDecision{{ClusterName: "other"}}}},
	}
	bound := Bind([]clusterv1beta2.ManagedClusterSetBinding{{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: "ns"},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "team-a"}}},
		map[string]*clusterv1beta2.ManagedClusterSet{"team-a": {ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}})
	notBound := NotBound("ns")

	cases := []struct {
		name      string
		placement *v1alpha2.Placement
		audit     bool
		// want is each cluster as "name delivered|placed|-: reason".
		want []string
	}{
		{"no placement", nil, false, []string{
			"east -: " + ReasonNotMatched, "lab -: " + ReasonNotMatched, "leaving -: " + ReasonNotMatched,
			"other -: " + ReasonNotMatched, "west -: " + ReasonNotMatched}},
		{"names, one without a ManagedCluster, one being deleted, one outside the bound sets",
			&v1alpha2.Placement{Clusters: []string{"west", "nowhere", "east", "leaving", "other"}}, false, []string{
				"east delivered: ", "lab -: " + ReasonNotMatched, "leaving placed: " + ReasonBeingDeleted,
				"nowhere placed: " + ReasonNoManagedCluster, "other placed: " + notBound, "west delivered: "}},
		{"the same, the bindings audited", &v1alpha2.Placement{Clusters: []string{"west", "nowhere", "east", "leaving", "other"}}, true, []string{
			"east delivered: ", "lab -: " + ReasonNotMatched, "leaving placed: " + ReasonBeingDeleted,
			"nowhere placed: " + ReasonNoManagedCluster, "other delivered: " + notBound, "west delivered: "}},
		{"selector", &v1alpha2.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}, false, []string{
			"east delivered: ", "lab -: " + ReasonNotMatched, "leaving placed: " + ReasonBeingDeleted,
			"other placed: " + notBound, "west delivered: "}},
		{"placement decisions", &v1alpha2.Placement{PlacementRef: &v1alpha2.PlacementRef{Name: "canary"}}, false, []string{
			"east -: " + ReasonNotMatched, "ghost placed: " + ReasonNoManagedCluster, "lab delivered: ",
			"leaving -: " + ReasonNotMatched, "other placed: " + notBound, "west -: " + ReasonNotMatched}},
		{"names take precedence over a Placement", &v1alpha2.Placement{Clusters: []string{"east"}, PlacementRef: &v1alpha2.PlacementRef{Name: "canary"}}, false, []string{
			"east delivered: ", "lab -: " + ReasonNotMatched, "leaving -: " + ReasonNotMatched,
			"other -: " + ReasonNotMatched, "west -: " + ReasonNotMatched}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var decided []clusterv1beta1.PlacementDecision
			if DecidedBy(tc.placement) != "" {
				decided = decisions
			}
			targets, err := Explain(tc.placement, "ns", clusters, decided, bound, tc.audit)
			if err != nil {
				t.Fatal(err)
			}
			var got, placed []string
			for _, tg := range targets {
				state := "-"
				switch {
				case tg.Delivered:
					state = "delivered"
				case tg.Placed:
					state = "placed"
				}
				got = append(got, fmt.Sprintf("%s %s: %s", tg.Cluster, state, tg.Reason))
				if tg.Placed && tg.ManagedCluster != nil && tg.ManagedCluster.DeletionTimestamp == nil {
					placed = append(placed, tg.Cluster)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Explain:\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
			selected, err := Select(tc.placement, clusters, decided)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, mc := range selected {
				names = append(names, mc.Name)
			}
			if !slices.Equal(names, placed) {
				t.Errorf("Select = %v, want the clusters Explain places that are not being deleted: %v", names, placed)
			}
		})
	}

	if _, err := Explain(&v1alpha2.Placement{ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near"}}}},
		"ns", clusters, nil, bound, false); err == nil || !strings.Contains(err.Error(), "placement.clusterSelector") {
		t.Errorf("an invalid selector: %v, want an error naming placement.clusterSelector", err)
	}
}

// Decision groups are read only for a placement by an OCM Placement, by name and by index.
func TestDecisionGroupsOnlyOfAPlacementRef(t *testing.T) {
	decisions := []clusterv1beta1.PlacementDecision{{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
		clusterv1beta1.DecisionGroupNameLabel: "canary", clusterv1beta1.DecisionGroupIndexLabel: "0"}},
		Status: clusterv1beta1.PlacementDecisionStatus{Decisions: []clusterv1beta1.ClusterDecision{{ClusterName: "lab"}}}}}
	if got := DecisionGroups(&v1alpha2.Placement{PlacementRef: &v1alpha2.PlacementRef{Name: "p"}}, decisions); !slices.Equal(got["lab"], []string{"canary", "0"}) {
		t.Errorf("groups of lab: %v, want canary and 0", got["lab"])
	}
	if got := DecisionGroups(&v1alpha2.Placement{Clusters: []string{"lab"}}, decisions); got != nil {
		t.Errorf("groups without a Placement: %v, want none", got)
	}
}
