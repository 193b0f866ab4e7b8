package hub

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-mc/ferry/pkg/registration"
)

// ClusterAvailabilityReconciler keeps the HubAccepted, Joined and Available conditions of the
// ManagedClusters `ferry-hub clusters add` registered (label registration.RegisteredByLabel), from the
// Lease their agent renews in the cluster's namespace: Joined once the agent first renewed it,
// Available while it renews it, Unknown after registration.LeaseGraceTimes lease durations without.
// Every other ManagedCluster is OCM registration's and is never touched.
type ClusterAvailabilityReconciler struct {
	Client client.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Shard is which ManagedClusters this hub keeps the conditions of; the zero value is all of them.
	Shard Shard
}

// SetupWithManager registers the reconciler: a ManagedCluster is looked at when it or its Lease
// changes, and again when its Lease would go stale.
func (r *ClusterAvailabilityReconciler) SetupWithManager(mgr ctrl.Manager) error {
	registered := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[registration.RegisteredByLabel] == registration.RegisteredByFerry
	})
	leaseOfCluster := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if o.GetName() != registration.LeaseName {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetNamespace()}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("clusteravailability").
		For(&clusterv1.ManagedCluster{}, builder.WithPredicates(registered)).
		Watches(&coordinationv1.Lease{}, leaseOfCluster, builder.WithPredicates(registered)).
		Complete(r)
}

// Reconcile writes the cluster's conditions when they differ from what its Lease says, and asks to be
// called again when the Lease would go stale.
func (r *ClusterAvailabilityReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if !r.Shard.ownsObject(req.NamespacedName) {
		return reconcile.Result{}, nil // another shard writes its conditions
	}
	mc := &clusterv1.ManagedCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, mc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if mc.Labels[registration.RegisteredByLabel] != registration.RegisteredByFerry || mc.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	lease := &coordinationv1.Lease{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: mc.Name, Name: registration.LeaseName}, lease); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("get Lease %s/%s: %w", mc.Name, registration.LeaseName, err)
		}
		lease = nil
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	conditions, recheck := computeClusterConditions(mc, lease, now())
	updated := mc.DeepCopy()
	for _, c := range conditions {
		meta.SetStatusCondition(&updated.Status.Conditions, c)
	}
	// Steady state writes nothing: a renewal that keeps the cluster Available changes no condition.
	if !conditionsChanged(mc.Status.Conditions, updated.Status.Conditions) {
		return reconcile.Result{RequeueAfter: recheck}, nil
	}
	if err := r.Client.Status().Patch(ctx, updated, client.MergeFromWithOptions(mc, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{Requeue: true}, nil
		}
		return reconcile.Result{}, fmt.Errorf("write the conditions of ManagedCluster %s: %w", mc.Name, err)
	}
	return reconcile.Result{RequeueAfter: recheck}, nil
}

// computeClusterConditions is what a registered cluster's conditions are at now, given its Lease (nil:
// none), and how long until they would change without a renewal (zero: not before a change of the
// Lease).
func computeClusterConditions(mc *clusterv1.ManagedCluster, lease *coordinationv1.Lease, now time.Time) ([]metav1.Condition, time.Duration) {
	var out []metav1.Condition
	if mc.Spec.HubAcceptsClient {
		out = append(out, metav1.Condition{Type: clusterv1.ManagedClusterConditionHubAccepted, Status: metav1.ConditionTrue,
			Reason: "HubClusterAdminAccepted", Message: "Registered with `ferry-hub clusters add`"})
	} else {
		out = append(out, metav1.Condition{Type: clusterv1.ManagedClusterConditionHubAccepted, Status: metav1.ConditionFalse,
			Reason: "HubClusterAdminDenied", Message: "spec.hubAcceptsClient is false"})
	}
	if lease == nil || lease.Spec.RenewTime == nil {
		where := fmt.Sprintf("the Lease %s/%s", mc.Name, registration.LeaseName)
		if lease == nil {
			where += " (missing: run `ferry-hub clusters add " + mc.Name + "` again)"
		}
		return append(out, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionUnknown,
			Reason: "WaitingForAgent", Message: "No ferry-agent has renewed " + where + " yet: install deploy/agent/spoke on the cluster with the " +
				registration.HubKubeconfigSecret + " that `ferry-hub clusters add` wrote"}), 0
	}
	out = append(out, metav1.Condition{Type: clusterv1.ManagedClusterConditionJoined, Status: metav1.ConditionTrue,
		Reason: "ManagedClusterJoined", Message: "ferry-agent has renewed the cluster's Lease"})
	grace := registration.LeaseGraceTimes * registration.LeaseDuration(lease)
	renewed := lease.Spec.RenewTime.Time
	if stale := renewed.Add(grace); now.Before(stale) {
		return append(out, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue,
			Reason: "ManagedClusterAvailable", Message: "ferry-agent renews the cluster's Lease"}), stale.Sub(now)
	}
	return append(out, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionUnknown,
		Reason: "ManagedClusterLeaseUpdateStopped", Message: fmt.Sprintf("ferry-agent has not renewed the Lease %s/%s since %s (more than %s): "+
			"the agent is stopped or cannot reach the hub", mc.Name, registration.LeaseName, renewed.UTC().Format(time.RFC3339), grace)}), 0
}

// conditionsChanged says whether a condition differs in anything but its transition time.
func conditionsChanged(before, after []metav1.Condition) bool {
	if len(before) != len(after) {
		return true
	}
	for _, a := range after {
		b := meta.FindStatusCondition(before, a.Type)
		if b == nil || b.Status != a.Status || b.Reason != a.Reason || b.Message != a.Message || b.ObservedGeneration != a.ObservedGeneration {
			return true
		}
	}
	return false
}
