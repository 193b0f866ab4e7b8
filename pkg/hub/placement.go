package hub

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// TargetClusters returns, sorted, the managed clusters an AppConfig's placement names that exist on the
// hub: its explicit cluster names, the ManagedClusters its selector matches, or the decisions of the OCM
// Placement it refers to (in the AppConfig's namespace). Without a placement there are none. The
// ManagedClusters are the cache's own objects (no copy of a whole fleet per reconcile): read only.
func TargetClusters(ctx context.Context, c client.Client, app *v1alpha2.ApplicationConfiguration) ([]string, error) {
	p := app.Spec.Placement
	if p == nil {
		return nil, nil
	}
	clusters := &clusterv1.ManagedClusterList{}
	var wanted []string
	switch {
	case len(p.Clusters) > 0:
		if err := c.List(ctx, clusters, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("list ManagedClusters: %w", err)
		}
		wanted = p.Clusters
	case p.ClusterSelector != nil:
		selector, err := metav1.LabelSelectorAsSelector(p.ClusterSelector)
		if err != nil {
			return nil, fmt.Errorf("placement.clusterSelector: %w", err)
		}
		if err := c.List(ctx, clusters, client.MatchingLabelsSelector{Selector: selector}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("list ManagedClusters: %w", err)
		}
		for _, mc := range clusters.Items {
			wanted = append(wanted, mc.Name)
		}
	case p.PlacementRef != nil:
		decisions := &clusterv1beta1.PlacementDecisionList{}
		if err := c.List(ctx, decisions, client.InNamespace(app.Namespace),
			client.MatchingLabels{clusterv1beta1.PlacementLabel: p.PlacementRef.Name}); err != nil {
			return nil, fmt.Errorf("list PlacementDecisions of Placement %s: %w", p.PlacementRef.Name, err)
		}
		for _, d := range decisions.Items {
			for _, dec := range d.Status.Decisions {
				wanted = append(wanted, dec.ClusterName)
			}
		}
		if err := c.List(ctx, clusters, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("list ManagedClusters: %w", err)
		}
	}
	exists := map[string]bool{}
	for _, mc := range clusters.Items {
		if mc.DeletionTimestamp == nil {
			exists[mc.Name] = true
		}
	}
	out := make([]string, 0, len(wanted))
	for _, name := range wanted {
		if exists[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// placementChanged passes the changes of a ManagedCluster that can move an AppConfig's placement: its
// labels, and the start of its deletion (a finalizer may hold it for a long time, and a cluster being
// deleted leaves every placement at once, see TargetClusters). Its status changes often and moves
// nothing.
var placementChanged = predicate.Or[client.Object](predicate.LabelChangedPredicate{}, predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld != nil && e.ObjectNew != nil &&
			(e.ObjectOld.GetDeletionTimestamp() == nil) != (e.ObjectNew.GetDeletionTimestamp() == nil)
	},
})
