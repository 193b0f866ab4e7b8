package hub

import (
	"context"
	"fmt"
	"maps"
	"slices"

	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/placement"
)

// ClusterLister returns the hub's ManagedClusters, read only.
type ClusterLister func(ctx context.Context) ([]*clusterv1.ManagedCluster, error)

// ListedClusters is a ClusterLister that lists the ManagedClusters with c.
func ListedClusters(c client.Reader) ClusterLister {
	return func(ctx context.Context) ([]*clusterv1.ManagedCluster, error) {
		list := &clusterv1.ManagedClusterList{}
		if err := c.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		out := make([]*clusterv1.ManagedCluster, 0, len(list.Items))
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
		return out, nil
	}
}

// TargetClusters returns, sorted, the managed clusters an AppConfig's placement names that exist on the
// hub and are not being deleted: its explicit cluster names, the ManagedClusters its selector matches,
// or the decisions of the OCM Placement it refers to (in the AppConfig's namespace, read with c).
// Without a placement there are none. Which of them the AppConfig may reach is Place's to say.
func TargetClusters(ctx context.Context, c client.Reader, clusters ClusterLister, app *v1alpha2.ApplicationConfiguration) ([]string, error) {
	selected, err := selectedClusters(ctx, c, clusters, app)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(selected))
	for _, mc := range selected {
		out = append(out, mc.Name)
	}
	return out, nil
}

// selectedClusters are TargetClusters' ManagedClusters, sorted by name, read only: placement.Select
// of the decisions (when the placement is by an OCM Placement, read with c) and the clusters listed.
func selectedClusters(ctx context.Context, c client.Reader, clusters ClusterLister, app *v1alpha2.ApplicationConfiguration) ([]*clusterv1.ManagedCluster, error) {
	p := app.Spec.Placement
	if !placement.Names(p) {
		return nil, nil
	}
	var decisions []clusterv1beta1.PlacementDecision
	if name := placement.DecidedBy(p); name != "" {
		var err error
		if decisions, err = listDecisions(ctx, c, app.Namespace, name); err != nil {
			return nil, err
		}
	}
	all, err := clusters(ctx)
	if err != nil {
		return nil, fmt.Errorf("list ManagedClusters: %w", err)
	}
	return placement.Select(p, all, decisions)
}

// listDecisions lists, with c, the PlacementDecisions of the Placement name of namespace.
func listDecisions(ctx context.Context, c client.Reader, namespace, name string) ([]clusterv1beta1.PlacementDecision, error) {
	decisions := &clusterv1beta1.PlacementDecisionList{}
	if err := c.List(ctx, decisions, client.InNamespace(namespace), client.MatchingLabels{clusterv1beta1.PlacementLabel: name}); err != nil {
		return nil, fmt.Errorf("list PlacementDecisions of Placement %s: %w", name, err)
	}
	return decisions.Items, nil
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

// clusterFactsChanged passes the changes of a ManagedCluster that overrides may read besides its labels:
// its annotations and the ClusterClaims it reports. A cluster whose facts change is rendered again at
// once, at the revision it has.
var clusterFactsChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, oldOK := e.ObjectOld.(*clusterv1.ManagedCluster)
		mc, ok := e.ObjectNew.(*clusterv1.ManagedCluster)
		return oldOK && ok && (!maps.Equal(old.Annotations, mc.Annotations) || !slices.Equal(old.Status.ClusterClaims, mc.Status.ClusterClaims))
	},
}

// decisionGroups are, for an AppConfig placed by an OCM Placement, the decision groups each of its
// clusters is in, by name and by index (the labels of the PlacementDecisions holding it): what a
// rollout's stages may take clusters by.
func decisionGroups(ctx context.Context, c client.Reader, app *v1alpha2.ApplicationConfiguration) (map[string][]string, error) {
	p := app.Spec.Placement
	if p == nil || p.PlacementRef == nil {
		return nil, nil
	}
	decisions, err := listDecisions(ctx, c, app.Namespace, p.PlacementRef.Name)
	if err != nil {
		return nil, err
	}
	return placement.DecisionGroups(p, decisions), nil
}
