package fleetsim

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
)

// The clusters are dealt to the sets in turn: no set has more than one cluster more than another, the
// first sets take the odd ones, and without sets no cluster joins one.
func TestSetOfDealsClustersInTurn(t *testing.T) {
	sets := ClusterSetNames("", 3)
	if !slices.Equal(sets, []string{"fleet-set-000", "fleet-set-001", "fleet-set-002"}) {
		t.Fatalf("set names %v", sets)
	}
	members := map[string][]int{}
	for i := range 10 {
		members[SetOf(i, sets)] = append(members[SetOf(i, sets)], i)
	}
	want := map[string][]int{"fleet-set-000": {0, 3, 6, 9}, "fleet-set-001": {1, 4, 7}, "fleet-set-002": {2, 5, 8}}
	for set, m := range want {
		if !slices.Equal(members[set], m) {
			t.Errorf("set %s holds clusters %v, want %v", set, members[set], m)
		}
	}
	if len(members) != 3 {
		t.Errorf("clusters went to %d sets, want 3: %v", len(members), members)
	}
	for i := range 4 {
		if s := SetOf(i, nil); s != "" {
			t.Errorf("cluster %d joins %q with no sets, want none", i, s)
		}
	}
	if got := ClusterSetNames("team-", 1001); got[0] != "team-000" || got[1000] != "team-1000" {
		t.Errorf("names %s … %s, want team-000 … team-1000", got[0], got[1000])
	}
}

// Registered over exclusive sets and bound to two namespaces, every cluster is a member of a set
// bound in each namespace — by its set's label, exactly one — and global, bound too, holds them all;
// binding again changes nothing.
func TestBindClusterSetsReachesEveryCluster(t *testing.T) {
	cfg := FastConfig(shared.Get(t).Hub.Config, 500, 1000)
	setNames := ClusterSetNames("bind-set-", 3)
	names, err := RegisterClusters(t.Context(), cfg, ClusterOptions{Count: 10, Prefix: "bind-", ClusterSets: setNames})
	if err != nil {
		t.Fatal(err)
	}
	sets := []*clusterv1beta2.ManagedClusterSet{GlobalSet()}
	for _, name := range setNames {
		sets = append(sets, ExclusiveSet(name))
	}
	namespaces := []string{"bind-team-a", "bind-team-b"}
	for range 2 {
		if err := BindClusterSets(t.Context(), cfg, sets, namespaces, 4); err != nil {
			t.Fatal(err)
		}
	}
	clusters, err := clusterclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]*clusterv1beta2.ManagedClusterSet{}
	for _, s := range sets {
		got, err := clusters.ClusterV1beta2().ManagedClusterSets().Get(t.Context(), s.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stored[s.Name] = got
	}
	if sel := stored[GlobalClusterSet].Spec.ClusterSelector; sel.SelectorType != clusterv1beta2.LabelSelector || sel.LabelSelector == nil {
		t.Errorf("global selects by %+v; want an empty LabelSelector", sel)
	}
	for _, name := range setNames {
		if sel := stored[name].Spec.ClusterSelector; sel.SelectorType != clusterv1beta2.ExclusiveClusterSetLabel {
			t.Errorf("set %s selects by %+v; want ExclusiveClusterSetLabel", name, sel)
		}
	}
	for _, ns := range namespaces {
		list, err := clusters.ClusterV1beta2().ManagedClusterSetBindings(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var bound []string
		for _, b := range list.Items {
			if b.Spec.ClusterSet != b.Name {
				t.Errorf("binding %s/%s binds set %s; OCM binds only a set of the binding's name", ns, b.Name, b.Spec.ClusterSet)
			}
			bound = append(bound, b.Name)
		}
		slices.Sort(bound)
		if want := append([]string{GlobalClusterSet}, setNames...); !slices.Equal(bound, slices.Sorted(slices.Values(want))) {
			t.Errorf("namespace %s binds %v, want %v", ns, bound, want)
		}
	}
	// Membership as OCM reads it: an exclusive set holds the clusters carrying its name in
	// ClusterSetLabel; a LabelSelector set those its selector matches.
	for i, name := range names {
		mc, err := clusters.ClusterV1().ManagedClusters().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var in []string
		for _, s := range stored {
			sel := s.Spec.ClusterSelector
			switch sel.SelectorType {
			case clusterv1beta2.ExclusiveClusterSetLabel:
				if mc.Labels[clusterv1beta2.ClusterSetLabel] == s.Name {
					in = append(in, s.Name)
				}
			case clusterv1beta2.LabelSelector:
				selector, err := metav1.LabelSelectorAsSelector(sel.LabelSelector)
				if err != nil {
					t.Fatal(err)
				}
				if selector.Matches(labels.Set(mc.Labels)) {
					in = append(in, s.Name)
				}
			}
		}
		slices.Sort(in)
		if want := slices.Sorted(slices.Values([]string{GlobalClusterSet, SetOf(i, setNames)})); !slices.Equal(in, want) {
			t.Errorf("cluster %s is in %v, want %v", name, in, want)
		}
	}
}

// Without sets, registration labels no cluster with a set; binding in a namespace that does not exist
// makes the namespace first.
func TestRegisterWithoutSetsLabelsNone(t *testing.T) {
	cfg := FastConfig(shared.Get(t).Hub.Config, 500, 1000)
	names, err := RegisterClusters(t.Context(), cfg, ClusterOptions{Count: 3, Prefix: "noset-"})
	if err != nil {
		t.Fatal(err)
	}
	clusters, err := clusterclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		mc, err := clusters.ClusterV1().ManagedClusters().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if set, ok := mc.Labels[clusterv1beta2.ClusterSetLabel]; ok {
			t.Errorf("cluster %s joined set %q with none given", name, set)
		}
	}
	if err := BindClusterSets(t.Context(), cfg, []*clusterv1beta2.ManagedClusterSet{ExclusiveSet("noset-set")}, []string{"noset-fresh"}, 0); err != nil {
		t.Fatal(err)
	}
	b, err := clusters.ClusterV1beta2().ManagedClusterSetBindings("noset-fresh").Get(t.Context(), "noset-set", metav1.GetOptions{})
	if err != nil || b.Spec.ClusterSet != "noset-set" {
		t.Errorf("binding in a namespace that did not exist: %+v, %v", b, err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSets().Get(t.Context(), "noset-set", metav1.GetOptions{}); err != nil {
		t.Errorf("set noset-set: %v", err)
	}
}
