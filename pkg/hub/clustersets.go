package hub

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/placement"
)

// A hub several teams share follows Open Cluster Management's model: workloads created in a namespace
// may only be distributed to the clusters of the ManagedClusterSets bound to that namespace
// (pkg/placement holds the rules, BoundSetsOf reads what they apply to).

// BoundSetsOf reads, with c, the ManagedClusterSetBindings of namespace and the sets of those that
// count, and returns what they bind (placement.Bind).
func BoundSetsOf(ctx context.Context, c client.Reader, namespace string) (placement.BoundSets, error) {
	bindings := &clusterv1beta2.ManagedClusterSetBindingList{}
	if err := c.List(ctx, bindings, client.InNamespace(namespace)); err != nil {
		return placement.BoundSets{}, fmt.Errorf("list ManagedClusterSetBindings of namespace %s: %w", namespace, err)
	}
	sets := make(map[string]*clusterv1beta2.ManagedClusterSet, len(bindings.Items))
	for i := range bindings.Items {
		b := &bindings.Items[i]
		if !placement.Binds(b) {
			continue
		}
		set := &clusterv1beta2.ManagedClusterSet{}
		if err := c.Get(ctx, client.ObjectKey{Name: b.Spec.ClusterSet}, set); err != nil {
			if client.IgnoreNotFound(err) == nil {
				continue // binds nothing
			}
			return placement.BoundSets{}, fmt.Errorf("read ManagedClusterSet %s: %w", b.Spec.ClusterSet, err)
		}
		sets[set.Name] = set
	}
	return placement.Bind(bindings.Items, sets), nil
}

// ClusterSetBindings is ferry-hub's --cluster-set-bindings: how it holds placements to the sets bound
// to an AppConfig's namespace.
type ClusterSetBindings string

const (
	// ClusterSetBindingsEnforce delivers only to bound clusters: what deploy/hub ships.
	ClusterSetBindingsEnforce ClusterSetBindings = "enforce"
	// ClusterSetBindingsAudit delivers wherever the placement says and reports the clusters enforce
	// would refuse: the step of an upgrade, so that nothing running is withdrawn before it is bound.
	ClusterSetBindingsAudit ClusterSetBindings = "audit"
)

// statusMode is the mode as the AppConfig's status names it.
func (m ClusterSetBindings) statusMode() v1alpha2.ClusterSetBindingsMode {
	if m == ClusterSetBindingsAudit {
		return v1alpha2.ClusterSetBindingsAudit
	}
	return v1alpha2.ClusterSetBindingsEnforce
}

// Placed is where an AppConfig's placement reaches.
type Placed struct {
	// Clusters get the application's ManifestWork, sorted.
	Clusters []string
	// Refused are the clusters the placement names that no set bound to the AppConfig's namespace
	// holds, sorted. In audit mode they are in Clusters too.
	Refused []string
	// Mode is how the bindings were held.
	Mode ClusterSetBindings
}

// Place is where app is delivered: the clusters its placement names (TargetClusters) that the sets
// bound to its namespace hold, and, refused, those they do not. In audit mode every cluster the
// placement names is delivered to, and the refused ones are only reported.
func Place(ctx context.Context, c client.Reader, clusters ClusterLister, app *v1alpha2.ApplicationConfiguration, mode ClusterSetBindings) (Placed, error) {
	placed := Placed{Mode: mode}
	selected, err := selectedClusters(ctx, c, clusters, app)
	if err != nil || len(selected) == 0 {
		return placed, err
	}
	bound, err := BoundSetsOf(ctx, c, app.Namespace)
	if err != nil {
		return placed, err
	}
	return placeAmong(selected, bound, mode), nil
}

// placeAmong places on the selected clusters the bound sets hold, refusing the others.
func placeAmong(selected []*clusterv1.ManagedCluster, bound placement.BoundSets, mode ClusterSetBindings) Placed {
	placed := Placed{Mode: mode, Clusters: make([]string, 0, len(selected))}
	for _, mc := range selected {
		allowed := bound.Holds(mc)
		if !allowed {
			placed.Refused = append(placed.Refused, mc.Name)
		}
		if allowed || mode == ClusterSetBindingsAudit {
			placed.Clusters = append(placed.Clusters, mc.Name)
		}
	}
	return placed
}

// equal reports whether p and o place the same.
func (p Placed) equal(o Placed) bool {
	return p.Mode == o.Mode && slices.Equal(p.Clusters, o.Clusters) && slices.Equal(p.Refused, o.Refused)
}

// boundCondition is the ClustersBound condition of an AppConfig in namespace placed so.
func (p Placed) boundCondition(namespace string) metav1.Condition {
	if len(p.Refused) == 0 {
		return metav1.Condition{Type: v1alpha2.ConditionClustersBound, Status: metav1.ConditionTrue, Reason: v1alpha2.ReasonAllClustersBound,
			Message: "every cluster the placement names is in a ManagedClusterSet bound to namespace " + namespace}
	}
	reason, outcome := v1alpha2.ReasonClustersNotBound, "they get no ManifestWork"
	if p.Mode == ClusterSetBindingsAudit {
		reason, outcome = v1alpha2.ReasonClustersNotBoundAudit, "ferry-hub only audits its bindings (--cluster-set-bindings=audit) and delivers to them all the same; enforced, they would get no ManifestWork"
	}
	return metav1.Condition{Type: v1alpha2.ConditionClustersBound, Status: metav1.ConditionFalse, Reason: reason, Message: p.refusedMessage(namespace, outcome)}
}

// refusedMessage says which clusters are refused, why, what happens to them and how to allow them.
func (p Placed) refusedMessage(namespace, outcome string) string {
	return fmt.Sprintf("the placement names %d clusters in no ManagedClusterSet bound to namespace %s (%s): %s; "+
		"to allow them, a hub administrator creates a ManagedClusterSetBinding in %s for a set that holds them "+
		"(which needs create on managedclustersets/bind for that set)",
		len(p.Refused), namespace, outcome, someOf(p.Refused, maxEventNote/2), namespace)
}

// notBoundReady is the Ready condition of an AppConfig whose placement reaches clusters, none of them
// bound: nothing is delivered.
func (p Placed) notBoundReady(namespace string) (metav1.Condition, bool) {
	if p.Mode == ClusterSetBindingsAudit || len(p.Clusters) > 0 || len(p.Refused) == 0 {
		return metav1.Condition{}, false
	}
	return metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonClustersNotBound,
		Message: "delivered to no cluster: " + p.refusedMessage(namespace, "they get no ManifestWork")}, true
}

// status is the AppConfig's status.placement for p.
func (p Placed) status() *v1alpha2.PlacementStatus {
	return &v1alpha2.PlacementStatus{
		Clusters:           slices.Clone(p.Clusters[:min(len(p.Clusters), v1alpha2.MaxClustersListed)]),
		Refused:            slices.Clone(p.Refused[:min(len(p.Refused), v1alpha2.MaxClustersListed)]),
		RefusedClusters:    int32(len(p.Refused)),
		ClusterSetBindings: p.Mode.statusMode(),
	}
}

// bindingChanged passes the changes of a ManagedClusterSet or a ManagedClusterSetBinding that can move
// a placement: its coming, its going, the start of its deletion, and a change of its spec. Their status
// (OCM's controllers write it) moves nothing.
var bindingChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return true },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld == nil || e.ObjectNew == nil {
			return true
		}
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
			(e.ObjectOld.GetDeletionTimestamp() == nil) != (e.ObjectNew.GetDeletionTimestamp() == nil)
	},
}

// validClusterSetBindings parses --cluster-set-bindings.
func validClusterSetBindings(m ClusterSetBindings) error {
	switch m {
	case ClusterSetBindingsEnforce, ClusterSetBindingsAudit:
		return nil
	}
	return fmt.Errorf("--cluster-set-bindings %q: want %s", m, strings.Join([]string{string(ClusterSetBindingsEnforce), string(ClusterSetBindingsAudit)}, " or "))
}
