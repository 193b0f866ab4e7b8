package placement

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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

// Only a binding named after its set binds it, and only while neither is being deleted; a set that
// does not exist or whose selector is invalid binds nothing.
func TestBindCountsOnlyTheBindingsOCMCounts(t *testing.T) {
	now := metav1.Now()
	binding := func(name, set string) clusterv1beta2.ManagedClusterSetBinding {
		return clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set}}
	}
	set := func(name string) *clusterv1beta2.ManagedClusterSet {
		return &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	leaving := binding("leaving", "leaving")
	leaving.DeletionTimestamp = &now
	goneSet := set("gone-set")
	goneSet.DeletionTimestamp = &now
	bad := set("bad")
	bad.Spec.ClusterSelector = clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector,
		LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}}
	bindings := []clusterv1beta2.ManagedClusterSetBinding{
		binding("prod", "prod"), binding("alias", "dev"), leaving, binding("gone-set", "gone-set"), binding("missing", "missing"), binding("bad", "bad"),
	}
	sets := map[string]*clusterv1beta2.ManagedClusterSet{"prod": set("prod"), "dev": set("dev"), "leaving": set("leaving"), "gone-set": goneSet, "bad": bad}
	if got := Bind(bindings, sets).Names; len(got) != 1 || got[0] != "prod" {
		t.Errorf("bound %v, want prod alone", got)
	}
}
