package hub

import (
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/ferry-mc/ferry/pkg/placement"
)

// Enforced, only bound clusters are delivered to; audited, all are, and the same ones are reported.
func TestPlaceAmongBoundSets(t *testing.T) {
	cluster := func(name, set string) *clusterv1.ManagedCluster {
		return &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: set}}}
	}
	selected := []*clusterv1.ManagedCluster{cluster("a", "team-a"), cluster("b", "team-b"), cluster("c", "")}
	bound := boundSets("team-a")

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
	none := placeAmong(selected, placement.BoundSets{}, ClusterSetBindingsEnforce)
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
	var names []string
	for i := range 10 {
		names = append(names, fmt.Sprintf("set-%d", i))
	}
	bound := boundSets(names...)
	b.ReportAllocs()
	for b.Loop() {
		placeAmong(selected, bound, ClusterSetBindingsEnforce)
	}
}

// boundSets are the exclusive-label sets of names, each bound by a binding of its name.
func boundSets(names ...string) placement.BoundSets {
	var bindings []clusterv1beta2.ManagedClusterSetBinding
	sets := map[string]*clusterv1beta2.ManagedClusterSet{}
	for _, name := range names {
		bindings = append(bindings, clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: name}})
		sets[name] = &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	return placement.Bind(bindings, sets)
}
