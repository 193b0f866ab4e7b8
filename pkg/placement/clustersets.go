package placement

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
)

// A hub several teams share follows Open Cluster Management's model: workloads created in a namespace
// may only be distributed to the clusters of the ManagedClusterSets bound to that namespace. A
// ManagedClusterSet groups clusters; a ManagedClusterSetBinding in a namespace, named after its set,
// projects the set there, and creating one needs `create` on managedclustersets/bind for that set
// (deploy/hub's admission policy, as OCM's webhook). Membership is computed here, from the set's
// selector, so that a hub without OCM's registration controller holds tenants to it all the same: the
// binding's Bound condition, which only that controller writes, is not read.

// BoundSets are the ManagedClusterSets bound to one namespace: what its AppConfigs may reach.
type BoundSets struct {
	// Names of the sets, sorted.
	Names []string
	// exclusive are the sets of OCM's exclusive label, by name: a cluster's label finds its set at
	// once, where matching it against ten sets' selectors took as long as placing it.
	exclusive map[string]bool
	// selectors are those of the LabelSelector sets.
	selectors []labels.Selector
}

// Holds reports whether a cluster is a member of any of the sets.
func (b BoundSets) Holds(mc *clusterv1.ManagedCluster) bool {
	if set, ok := mc.Labels[clusterv1beta2.ClusterSetLabel]; ok && b.exclusive[set] {
		return true
	}
	for _, s := range b.selectors {
		if s.Matches(labels.Set(mc.Labels)) {
			return true
		}
	}
	return false
}

// add binds one more set.
func (b *BoundSets) add(set *clusterv1beta2.ManagedClusterSet) error {
	if typ := set.Spec.ClusterSelector.SelectorType; typ == "" || typ == clusterv1beta2.ExclusiveClusterSetLabel {
		if b.exclusive == nil {
			b.exclusive = map[string]bool{}
		}
		b.exclusive[set.Name] = true
	} else {
		selector, err := ClusterSetSelector(set)
		if err != nil {
			return err
		}
		b.selectors = append(b.selectors, selector)
	}
	b.Names = append(b.Names, set.Name)
	return nil
}

// Binds reports whether a ManagedClusterSetBinding counts: it is named after its set (as OCM
// requires) and is not being deleted. A reader fetches the sets of those that do, for Bind.
func Binds(b *clusterv1beta2.ManagedClusterSetBinding) bool {
	return b.DeletionTimestamp == nil && b.Name == b.Spec.ClusterSet
}

// Bind is what the ManagedClusterSetBindings of one namespace bind, given the ManagedClusterSets that
// exist by name (at least those of the bindings that count; sets may hold more). A binding counts as
// Binds says; a binding of a set that does not exist or is being deleted binds nothing, and neither does
// a set whose selector is invalid, until it is fixed. Both are read only.
func Bind(bindings []clusterv1beta2.ManagedClusterSetBinding, sets map[string]*clusterv1beta2.ManagedClusterSet) BoundSets {
	var out BoundSets
	bound := make(map[string]bool, len(bindings))
	for i := range bindings {
		b := &bindings[i]
		if !Binds(b) || bound[b.Spec.ClusterSet] {
			continue
		}
		set := sets[b.Spec.ClusterSet]
		if set == nil || set.DeletionTimestamp != nil {
			continue
		}
		if err := out.add(set); err != nil {
			continue // the set holds no cluster until its selector is fixed
		}
		bound[b.Spec.ClusterSet] = true
	}
	slices.Sort(out.Names)
	return out
}

// ClusterSetSelector is the label selector of a ManagedClusterSet's members, as OCM defines them:
// ExclusiveClusterSetLabel (the default) holds the clusters labelled
// cluster.open-cluster-management.io/clusterset=<set>; LabelSelector those its selector matches (an
// empty one, as OCM's global set has, every cluster).
func ClusterSetSelector(set *clusterv1beta2.ManagedClusterSet) (labels.Selector, error) {
	switch typ := set.Spec.ClusterSelector.SelectorType; typ {
	case "", clusterv1beta2.ExclusiveClusterSetLabel:
		return labels.SelectorFromSet(labels.Set{clusterv1beta2.ClusterSetLabel: set.Name}), nil
	case clusterv1beta2.LabelSelector:
		selector := set.Spec.ClusterSelector.LabelSelector
		if selector == nil {
			selector = &metav1.LabelSelector{}
		}
		s, err := metav1.LabelSelectorAsSelector(selector)
		if err != nil {
			return nil, fmt.Errorf("ManagedClusterSet %s: spec.clusterSelector.labelSelector: %w", set.Name, err)
		}
		return s, nil
	default:
		return nil, fmt.Errorf("ManagedClusterSet %s: unknown spec.clusterSelector.selectorType %q", set.Name, typ)
	}
}
