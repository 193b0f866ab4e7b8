package hub

import (
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
)

// A ManagedClusterSet's members as OCM defines them, for both selector types.
func TestClusterSetSelectorHoldsOCMsMembers(t *testing.T) {
	exclusive := func(name string, typ clusterv1beta2.SelectorType) *clusterv1beta2.ManagedClusterSet {
		return &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: typ}}}
	}
	bySelector := func(name string, s *metav1.LabelSelector) *clusterv1beta2.ManagedClusterSet {
		set := exclusive(name, clusterv1beta2.LabelSelector)
		set.Spec.ClusterSelector.LabelSelector = s
		return set
	}
	cases := []struct {
		name    string
		set     *clusterv1beta2.ManagedClusterSet
		labels  map[string]string
		holds   bool
		invalid bool
	}{
		{"exclusive label, member", exclusive("prod", clusterv1beta2.ExclusiveClusterSetLabel), map[string]string{clusterv1beta2.ClusterSetLabel: "prod"}, true, false},
		{"exclusive label, another set's", exclusive("prod", clusterv1beta2.ExclusiveClusterSetLabel), map[string]string{clusterv1beta2.ClusterSetLabel: "dev"}, false, false},
		{"no selector type is the exclusive label", exclusive("prod", ""), map[string]string{clusterv1beta2.ClusterSetLabel: "prod"}, true, false},
		{"exclusive label, other labels only", exclusive("prod", ""), map[string]string{"env": "prod"}, false, false},
		{"global: an empty selector holds every cluster", bySelector("global", &metav1.LabelSelector{}), nil, true, false},
		{"no selector at all holds every cluster", bySelector("global", nil), map[string]string{"a": "b"}, true, false},
		{"label selector, match", bySelector("eu", &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}), map[string]string{"region": "eu"}, true, false},
		{"label selector, no match", bySelector("eu", &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}), map[string]string{"region": "us"}, false, false},
		{"an invalid selector", bySelector("bad", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}), nil, false, true},
		{"an unknown selector type", exclusive("odd", "ByMagic"), nil, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ClusterSetSelector(tc.set)
			if tc.invalid {
				if err == nil {
					t.Fatalf("selector %v, want an error", s)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Matches(labels.Set(tc.labels)); got != tc.holds {
				t.Errorf("holds a cluster labelled %v: %v, want %v", tc.labels, got, tc.holds)
			}
		})
	}
}

// Enforced, only bound clusters are delivered to; audited, all are, and the same ones are reported.
func TestPlaceAmongBoundSets(t *testing.T) {
	cluster := func(name, set string) *clusterv1.ManagedCluster {
		return &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: set}}}
	}
	selected := []*clusterv1.ManagedCluster{cluster("a", "team-a"), cluster("b", "team-b"), cluster("c", "")}
	var bound BoundSets
	if err := bound.add(&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}); err != nil {
		t.Fatal(err)
	}

	enforced := placeAmong(selected, bound, ClusterSetBindingsEnforce)
	if !slices.Equal(enforced.Clusters, []string{"a"}) || !slices.Equal(enforced.Refused, []string{"b", "c"}) {
		t.Errorf("enforced: %+v, want a delivered, b and c refused", enforced)
	}
	if _, ok := enforced.notBoundReady("ns"); ok {
		t.Errorf("enforced with a cluster delivered: Ready says nothing is")
	}
	audited := placeAmong(selected, bound, ClusterSetBindingsAudit)
	if !slices.Equal(audited.Clusters, []string{"a", "b", "c"}) || !slices.Equal(audited.Refused, []string{"b", "c"}) {
		t.Errorf("audited: %+v, want all delivered, b and c reported", audited)
	}
	none := placeAmong(selected, BoundSets{}, ClusterSetBindingsEnforce)
	if len(none.Clusters) != 0 || len(none.Refused) != 3 {
		t.Errorf("nothing bound: %+v, want all refused", none)
	}
	if c, ok := none.notBoundReady("ns"); !ok || c.Reason != "ClustersNotBound" {
		t.Errorf("nothing bound: Ready %+v, want False ClustersNotBound", c)
	}

	// The status lists a bounded number of each, and counts them all.
	var many []*clusterv1.ManagedCluster
	for i := range 50 {
		many = append(many, cluster(fmt.Sprintf("c%02d", i), "team-b"))
	}
	st := placeAmong(many, bound, ClusterSetBindingsEnforce).status()
	if len(st.Refused) != 20 || st.RefusedClusters != 50 || len(st.Clusters) != 0 || st.ClusterSetBindings != "Enforce" {
		t.Errorf("status of 50 refused: %d listed, %d counted, %d delivered, mode %q", len(st.Refused), st.RefusedClusters, len(st.Clusters), st.ClusterSetBindings)
	}
}

func BenchmarkPlaceAmong10000ClustersOf10Sets(b *testing.B) {
	var selected []*clusterv1.ManagedCluster
	for i := range 10000 {
		selected = append(selected, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%05d", i),
			Labels: map[string]string{clusterv1beta2.ClusterSetLabel: fmt.Sprintf("set-%d", i%10), "fleet": "yes"}}})
	}
	var bound BoundSets
	for i := range 10 {
		if err := bound.add(&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("set-%d", i)}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		placeAmong(selected, bound, ClusterSetBindingsEnforce)
	}
}
