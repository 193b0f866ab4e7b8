package hub

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-mc/ferry/pkg/workreport"
)

// CompletedWorkReconciler deletes a ManifestWork once it has been Complete for its
// spec.deleteOption.ttlSecondsAfterFinished, as OCM's hub does with its CleanUpCompletedManifestWork
// gate: a work of Jobs that ran is cleaned up on the hub, and its agent then removes what it applied
// (unless the work orphans it). Every work with a TTL counts, whoever wrote it; works of an OCM
// ManifestWorkReplicaSet are left to the replica set, which would write them again. Works Ferry
// renders from AppConfigs carry no TTL, so none of them is deleted here (and written again by the
// AppConfig's delivery).
type CompletedWorkReconciler struct {
	Client client.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Shard is whose cluster namespaces this hub cleans; the zero value is all of them.
	Shard Shard
}

// SetupWithManager registers the reconciler for the works that have a TTL.
func (r *CompletedWorkReconciler) SetupWithManager(mgr ctrl.Manager) error {
	withTTL := predicate.NewPredicateFuncs(func(o client.Object) bool {
		w, ok := o.(*workv1.ManifestWork)
		return ok && w.Spec.DeleteOption != nil && w.Spec.DeleteOption.TTLSecondsAfterFinished != nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("completedworks").
		For(&workv1.ManifestWork{}, builder.WithPredicates(withTTL)).
		Complete(r)
}

// Reconcile deletes the work when its time is up, or asks to be called again when it will be.
func (r *CompletedWorkReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// The shard that owns the cluster cleans its namespace.
	if !r.Shard.ownsObject(types.NamespacedName{Name: req.Namespace}) {
		return reconcile.Result{}, nil
	}
	work := &workv1.ManifestWork{}
	if err := r.Client.Get(ctx, req.NamespacedName, work); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	remove, after := computeCompletedWorkDeletion(work, now())
	if !remove {
		return reconcile.Result{RequeueAfter: after}, nil
	}
	// The UID precondition: a work written again under the same name since is not this one.
	uid := work.UID
	err := r.Client.Delete(ctx, work, client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return reconcile.Result{}, fmt.Errorf("delete completed ManifestWork %s/%s: %w", work.Namespace, work.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("deleted a completed ManifestWork past its ttlSecondsAfterFinished",
		"manifestWork", req.NamespacedName, "ttlSecondsAfterFinished", *work.Spec.DeleteOption.TTLSecondsAfterFinished)
	return reconcile.Result{}, nil
}

// computeCompletedWorkDeletion says whether the work is to be deleted now and, if not but it will be,
// how long until then (0: not unless it changes).
func computeCompletedWorkDeletion(work *workv1.ManifestWork, now time.Time) (remove bool, after time.Duration) {
	if work.DeletionTimestamp != nil || work.Spec.DeleteOption == nil || work.Spec.DeleteOption.TTLSecondsAfterFinished == nil {
		return false, 0
	}
	if _, replicated := work.Labels[workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey]; replicated {
		return false, 0
	}
	complete := workreport.Complete(work.Status.Conditions)
	if complete == nil || complete.Status != metav1.ConditionTrue {
		return false, 0
	}
	deadline := complete.LastTransitionTime.Add(time.Duration(*work.Spec.DeleteOption.TTLSecondsAfterFinished) * time.Second)
	if now.Before(deadline) {
		return false, deadline.Sub(now)
	}
	return true, 0
}
