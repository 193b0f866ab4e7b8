package hub

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/override"
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

// selectedClusters are TargetClusters' ManagedClusters, sorted by name, read only.
func selectedClusters(ctx context.Context, c client.Reader, clusters ClusterLister, app *v1alpha2.ApplicationConfiguration) ([]*clusterv1.ManagedCluster, error) {
	p := app.Spec.Placement
	if p == nil {
		return nil, nil
	}
	var selector labels.Selector
	var wanted []string
	switch {
	case len(p.Clusters) > 0:
		wanted = p.Clusters
	case p.ClusterSelector != nil:
		var err error
		if selector, err = metav1.LabelSelectorAsSelector(p.ClusterSelector); err != nil {
			return nil, fmt.Errorf("placement.clusterSelector: %w", err)
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
	default:
		return nil, nil
	}
	all, err := clusters(ctx)
	if err != nil {
		return nil, fmt.Errorf("list ManagedClusters: %w", err)
	}
	var out []*clusterv1.ManagedCluster
	if selector != nil {
		for _, mc := range all {
			if mc.DeletionTimestamp == nil && selector.Matches(labels.Set(mc.Labels)) {
				out = append(out, mc)
			}
		}
	} else {
		named := make(map[string]bool, len(wanted))
		for _, name := range wanted {
			named[name] = true
		}
		out = make([]*clusterv1.ManagedCluster, 0, len(named))
		for _, mc := range all {
			if mc.DeletionTimestamp == nil && named[mc.Name] {
				out = append(out, mc)
				delete(named, mc.Name) // a lister may repeat none, but a cluster is placed once
			}
		}
	}
	slices.SortFunc(out, func(a, b *clusterv1.ManagedCluster) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
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
	decisions := &clusterv1beta1.PlacementDecisionList{}
	if err := c.List(ctx, decisions, client.InNamespace(app.Namespace),
		client.MatchingLabels{clusterv1beta1.PlacementLabel: p.PlacementRef.Name}); err != nil {
		return nil, fmt.Errorf("list PlacementDecisions of Placement %s: %w", p.PlacementRef.Name, err)
	}
	return override.DecisionGroups(decisions.Items), nil
}
