package placement

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/override"
)

// Names reports whether p names any cluster at all: by name, by selector or by a Placement. A reader
// lists nothing for a placement that does not.
func Names(p *v1alpha2.Placement) bool {
	return p != nil && (len(p.Clusters) > 0 || p.ClusterSelector != nil || p.PlacementRef != nil)
}

// DecidedBy is the name of the OCM Placement whose PlacementDecisions list p's clusters, "" when p
// places by names or by selector (which take precedence, in that order): the decisions a reader lists
// for Select, those labelled cluster.open-cluster-management.io/placement=<name> in the AppConfig's
// namespace.
func DecidedBy(p *v1alpha2.Placement) string {
	if p == nil || len(p.Clusters) > 0 || p.ClusterSelector != nil || p.PlacementRef == nil {
		return ""
	}
	return p.PlacementRef.Name
}

// DecisionGroups are, for an AppConfig placed by an OCM Placement (p.placementRef set), the decision
// groups each of its clusters is in, by name and by index, from the Placement's decisions: what a
// rollout's stages and the overrides may take clusters by. Nil for any other placement.
func DecisionGroups(p *v1alpha2.Placement, decisions []clusterv1beta1.PlacementDecision) map[string][]string {
	if p == nil || p.PlacementRef == nil {
		return nil
	}
	return override.DecisionGroups(decisions)
}

// matcher is the rule of one placement: a label selector, or the names it or its decisions list.
type matcher struct {
	selector labels.Selector
	named    map[string]bool
	// names are the named clusters in the order named, for those that have no ManagedCluster.
	names []string
}

// matcherOf is p's matcher, given the decisions of the Placement it refers to; ok is false when p
// names no cluster.
func matcherOf(p *v1alpha2.Placement, decisions []clusterv1beta1.PlacementDecision) (m matcher, ok bool, err error) {
	if !Names(p) {
		return matcher{}, false, nil
	}
	switch {
	case len(p.Clusters) > 0:
		m.names = p.Clusters
	case p.ClusterSelector != nil:
		if m.selector, err = metav1.LabelSelectorAsSelector(p.ClusterSelector); err != nil {
			return matcher{}, false, fmt.Errorf("placement.clusterSelector: %w", err)
		}
		return m, true, nil
	default:
		for _, d := range decisions {
			for _, dec := range d.Status.Decisions {
				m.names = append(m.names, dec.ClusterName)
			}
		}
	}
	m.named = make(map[string]bool, len(m.names))
	for _, name := range m.names {
		m.named[name] = true
	}
	return m, true, nil
}

// matches reports whether the placement takes mc, being deleted or not.
func (m matcher) matches(mc *clusterv1.ManagedCluster) bool {
	if m.selector != nil {
		return m.selector.Matches(labels.Set(mc.Labels))
	}
	return m.named[mc.Name]
}

// Select is the ManagedClusters of clusters p places the application on, sorted by name: those it names
// (or the decisions of its Placement list) or its selector matches, that are not being deleted — a
// cluster being deleted leaves every placement at once, though a finalizer may hold it for long.
// decisions are those of the Placement DecidedBy names; clusters are read only. Without a placement
// there are none. Which of them the AppConfig may reach is the bound sets' to say (BoundSets.Holds).
func Select(p *v1alpha2.Placement, clusters []*clusterv1.ManagedCluster, decisions []clusterv1beta1.PlacementDecision) ([]*clusterv1.ManagedCluster, error) {
	m, ok, err := matcherOf(p, decisions)
	if !ok || err != nil {
		return nil, err
	}
	var out []*clusterv1.ManagedCluster
	var placed map[string]bool
	if m.selector == nil {
		out, placed = make([]*clusterv1.ManagedCluster, 0, len(m.named)), make(map[string]bool, len(m.named))
	}
	for _, mc := range clusters {
		if mc.DeletionTimestamp != nil || !m.matches(mc) {
			continue
		}
		if placed != nil {
			if placed[mc.Name] {
				continue // a lister may repeat none, but a cluster is placed once
			}
			placed[mc.Name] = true
		}
		out = append(out, mc)
	}
	slices.SortFunc(out, func(a, b *clusterv1.ManagedCluster) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Why a cluster is not delivered to: the reasons of a Target.
const (
	// ReasonNoManagedCluster: the placement names a cluster the hub has no ManagedCluster of; it gets
	// its work once one exists.
	ReasonNoManagedCluster = "no ManagedCluster"
	// ReasonBeingDeleted: the cluster's ManagedCluster is being deleted.
	ReasonBeingDeleted = "being deleted"
	// ReasonNotMatched: the placement neither names nor selects the cluster.
	ReasonNotMatched = "not matched by the placement"
)

// NotBound is the reason of a cluster the placement names that no ManagedClusterSet bound to
// namespace holds.
func NotBound(namespace string) string {
	return "not in a ManagedClusterSet bound to namespace " + namespace
}

// Target is one cluster as the placement sees it.
type Target struct {
	Cluster string
	// ManagedCluster is the cluster's, nil when it has none. Read only.
	ManagedCluster *clusterv1.ManagedCluster
	// Placed: the placement names or matches the cluster, delivered to or not.
	Placed bool
	// Delivered: the cluster gets the application's ManifestWork.
	Delivered bool
	// Reason says why the cluster is not delivered to; for a cluster delivered to only because the
	// hub audits its bindings, why enforcing them would refuse it. "" for the others.
	Reason string
}

// Explain is every cluster the placement p of an AppConfig in namespace names or matches, and every
// other ManagedCluster of clusters, sorted by name, each saying whether it is delivered to and, if
// not, why: exactly as Select and the bound sets decide. With audit (the hub's
// --cluster-set-bindings=audit, which the AppConfig's status.placement records) a cluster outside the
// bound sets is delivered to all the same, and its reason says so.
func Explain(p *v1alpha2.Placement, namespace string, clusters []*clusterv1.ManagedCluster, decisions []clusterv1beta1.PlacementDecision,
	bound BoundSets, audit bool) ([]Target, error) {
	m, ok, err := matcherOf(p, decisions)
	if err != nil {
		return nil, err
	}
	selected, err := Select(p, clusters, decisions)
	if err != nil {
		return nil, err
	}
	isSelected := make(map[string]bool, len(selected))
	for _, mc := range selected {
		isSelected[mc.Name] = true
	}
	out := make([]Target, 0, len(clusters)+len(m.names))
	seen := make(map[string]bool, len(clusters))
	for _, mc := range clusters {
		if seen[mc.Name] {
			continue
		}
		seen[mc.Name] = true
		t := Target{Cluster: mc.Name, ManagedCluster: mc, Placed: ok && m.matches(mc)}
		switch {
		case !t.Placed:
			t.Reason = ReasonNotMatched
		case !isSelected[mc.Name]:
			t.Reason = ReasonBeingDeleted
		case !bound.Holds(mc):
			t.Reason, t.Delivered = NotBound(namespace), audit
		default:
			t.Delivered = true
		}
		out = append(out, t)
	}
	for _, name := range m.names {
		if !seen[name] {
			seen[name] = true
			out = append(out, Target{Cluster: name, Placed: true, Reason: ReasonNoManagedCluster})
		}
	}
	slices.SortFunc(out, func(a, b Target) int { return strings.Compare(a.Cluster, b.Cluster) })
	return out, nil
}
