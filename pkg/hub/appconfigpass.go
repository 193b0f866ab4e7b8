package hub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/override"
	"github.com/ferry-mc/ferry/pkg/render"
)

// appConfigPass is one reconcile of an AppConfig: what each step read or decided, for the steps after
// it and for the one status patch that ends the pass (patchStatus).
type appConfigPass struct {
	key types.NamespacedName
	// seen is upToDateDeliveries' count of changes before the cache was read.
	seen uint64
	app  *v1alpha2.ApplicationConfiguration

	rendered []render.Component
	// overrides are the AppConfig's overrides as its revision records them, and components what
	// those of its components need (render.Overrides).
	overrides  []v1alpha2.Override
	components *override.Components
	// target is the revision the AppConfig renders (or the one an undo names).
	target *revisionBase
	// revisionNotRecorded: the application revision could not be recorded; reported after delivery,
	// which it does not hold back.
	revisionNotRecorded error
	placed              *Placed
	plan                deliveryPlan
	rollout             rolloutOutcome
	// rolloutStatus is the status.rollout the pass ends with: the one it found, or its decision.
	rolloutStatus *v1alpha2.RolloutStatus
	// gone are the works the pass deleted, not counted in the status.
	gone map[types.NamespacedName]bool
	// diff and previewed are status.diff and the Previewed condition of a report-only pass; nil when it
	// did not preview.
	diff      *v1alpha2.DiffStatus
	previewed *metav1.Condition

	// ready is the Ready condition the pass ends with; nil: the status is not written (an error to
	// retry, a race to look at again, or nothing looked at).
	ready *metav1.Condition
	// delivered: the pass delivered everything it was to.
	delivered bool
	// result and err are what Reconcile returns once the status is written.
	result ctrl.Result
	err    error
}

// appConfigStep is one step of a pass. done ends the pass, its status still written; an error ends
// it without writing the status, and is retried.
type appConfigStep func(ctx context.Context, p *appConfigPass) (done bool, err error)

// steps are a pass's steps, in order.
func (r *AppConfigReconciler) steps() []appConfigStep {
	return []appConfigStep{
		r.read, r.addFinalizer, r.render, r.recordRevision, r.place, r.reportOnly, r.decideRollout, r.deliverWorks, r.deliveredReady,
	}
}

// notReady ends the pass with Ready False for what cannot be rendered or read as written, looked at
// again after requeue (0: only when something changes).
func (p *appConfigPass) notReady(re *render.Error, requeue time.Duration) (bool, error) {
	p.ready = &metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: re.Reason, Message: re.Error()}
	p.result.RequeueAfter = requeue
	return true, nil
}

// read reads the AppConfig. One gone ends the pass; one being deleted is finalized instead.
func (r *AppConfigReconciler) read(ctx context.Context, p *appConfigPass) (bool, error) {
	app := &v1alpha2.ApplicationConfiguration{}
	if err := r.Client.Get(ctx, p.key, app); err != nil {
		if apierrors.IsNotFound(err) {
			r.upToDate.forget(p.key)
			r.writtenStatuses.forget(p.key)
		}
		return true, client.IgnoreNotFound(err)
	}
	if app.DeletionTimestamp != nil {
		r.upToDate.forget(p.key)
		var err error
		p.result, err = r.finalize(ctx, app)
		return true, err
	}
	if app.Spec.Rollout != nil {
		// A rollout decides from its own record (the stable revision, a halt) in the status: read as
		// the API server has it, not as a cache that may not have seen the last write of it yet.
		fresh := &v1alpha2.ApplicationConfiguration{}
		if err := r.APIReader.Get(ctx, p.key, fresh); err != nil {
			return true, client.IgnoreNotFound(err)
		}
		app = fresh
	}
	p.app, p.rolloutStatus = app, app.Status.Rollout
	return false, nil
}

// addFinalizer holds the AppConfig until its works are gone.
func (r *AppConfigReconciler) addFinalizer(ctx context.Context, p *appConfigPass) (bool, error) {
	if !controllerutil.AddFinalizer(p.app, AppConfigFinalizer) {
		return false, nil
	}
	if err := r.Client.Update(ctx, p.app); err != nil {
		if apierrors.IsConflict(err) {
			// The AppConfig changed since the cache saw it: its watch event brings it back.
			p.result.RequeueAfter = conflictRetry
			return true, nil
		}
		return false, fmt.Errorf("add finalizer: %w", err)
	}
	return false, nil
}

// render renders the AppConfig's components, publishes the patch traits they wait for, and records the
// component revisions their patches make.
func (r *AppConfigReconciler) render(ctx context.Context, p *appConfigPass) (bool, error) {
	app := p.app
	in := render.Input{
		App: app, Component: r.resolve(ctx, app.Namespace), TraitDefinition: r.traitDefinition(ctx),
		PublishedPatches: r.publishedPatches(ctx, app), PatchedRevision: r.patchedRevision(ctx, app),
		ClusterScoped: render.ClusterScopedIn(r.Mapper),
	}
	rendered, err := render.Render(in)
	if err == nil {
		p.overrides, p.components, err = render.Overrides(in, rendered, r.ApplyOnceOnly, r.Mapper)
	}
	var re *render.Error
	var pending *render.PatchesPendingError
	switch {
	case errors.As(err, &re):
		// Nothing half-rendered is delivered, and nothing delivered before is taken away.
		return p.notReady(re, 30*time.Second)
	case errors.As(err, &pending):
		// The workload is held back, as it was, until it can change once with every patch. The
		// patch traits are published for their controllers; their watches bring the AppConfig back,
		// and the requeue covers a ConfigMap published after its trait turned Ready.
		if err := r.publishPatchTraits(ctx, app, pending.Component, pending.Traits); err != nil {
			if errors.As(err, &re) {
				return p.notReady(re, 30*time.Second)
			}
			return false, err
		}
		p.ready = &metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: "WaitingForPatchTraits", Message: pending.Error()}
		p.result.RequeueAfter = 10 * time.Second
		return true, nil
	case err != nil:
		return false, err
	}
	if err := r.deleteStalePatchTraits(ctx, app, rendered); err != nil {
		return false, err
	}
	if err := r.recordPatchedRevisions(ctx, app, rendered); err != nil {
		return false, err
	}
	p.rendered = rendered
	return false, nil
}

// recordRevision builds the revision the AppConfig renders and records it as an application revision;
// an undo's revision is delivered in its place.
func (r *AppConfigReconciler) recordRevision(ctx context.Context, p *appConfigPass) (bool, error) {
	app := p.app
	target, err := buildRevisionBase(app, p.rendered, p.overrides, p.components, r.ApplyOnceOnly, r.Mapper)
	var re *render.Error
	if errors.As(err, &re) {
		// Too large or empty to be a ManifestWork: nothing of it is delivered, what was stays.
		return p.notReady(re, 30*time.Second)
	}
	if err != nil {
		return false, err
	}
	var keep []string // a rollout's revisions stay as long as it needs them
	if ro := app.Status.Rollout; ro != nil {
		keep = append(keep, ro.Revision, ro.StableRevision)
	}
	// A revision that cannot be recorded (too large for the hub's storage, as its works will be too)
	// does not hold back the delivery, which reports its own failures; it is reported after it.
	p.revisionNotRecorded = r.recordAppRevision(ctx, app, target, keep...)
	undone, err := r.undoneRevision(ctx, app)
	if err != nil {
		if errors.As(err, &re) {
			return p.notReady(re, 0)
		}
		return false, err
	}
	p.target = target
	if undone != nil {
		p.target = undone
	}
	return false, nil
}

// place finds the clusters the AppConfig is delivered to: its placement's, held to the sets bound to
// its namespace, unless nothing moved them since the last complete delivery.
func (r *AppConfigReconciler) place(ctx context.Context, p *appConfigPass) (bool, error) {
	placed, unmoved := r.upToDate.placement(p.key, p.app.Generation, p.seen)
	if !unmoved {
		var err error
		if placed, err = Place(ctx, r.Client, r.clusters, p.app, cmp.Or(r.ClusterSetBindings, ClusterSetBindingsEnforce)); err != nil {
			return false, err
		}
	}
	p.placed = &placed
	p.plan = deliveryPlan{uniform: p.target}
	return false, nil
}

// decideRollout decides, under spec.rollout, which revision each cluster's work carries. The decision is
// recorded before the works follow it — the one status write before the pass's last: should the hub
// stop in between, the next one decides from it (a halt stays a halt, the stable revision stays known)
// and writes the works it did not.
func (r *AppConfigReconciler) decideRollout(ctx context.Context, p *appConfigPass) (bool, error) {
	if p.app.Spec.Rollout == nil {
		return false, nil
	}
	plan, ro, err := r.planRollout(ctx, p.app, p.target, p.placed.Clusters, time.Now())
	if err != nil {
		var re *render.Error
		if errors.As(err, &re) {
			// Nothing is moved by a rollout the hub cannot read: every cluster keeps what it has.
			return p.notReady(re, 0)
		}
		return false, err
	}
	p.plan, p.rollout, p.rolloutStatus = plan, ro, ro.status
	if rolloutMoved(p.app.Status.Rollout, ro.status) {
		if err := r.recordRollout(ctx, p.app, ro.status); err != nil {
			return false, err
		}
	}
	return false, nil
}

// deliverWorks writes the works of the plan. What could not be delivered ends the pass: a failed
// write is retried with backoff; a work Ferry does not own is looked at again now and then (the watch
// of ManifestWorks brings the AppConfig back when its owner renames or deletes it); a race with
// another writer soon, without a status write (not a failure, and not delivered yet either).
func (r *AppConfigReconciler) deliverWorks(ctx context.Context, p *appConfigPass) (bool, error) {
	delivered, gone, err := r.deliver(ctx, p.app, p.plan, *p.placed, p.seen)
	if err != nil {
		return false, err
	}
	p.gone = gone
	switch cond, notReady := delivered.notReady(len(p.placed.Clusters)); {
	case notReady:
		p.ready = &cond
		if len(delivered.failed) > 0 {
			p.err = errors.New(cond.Message)
		} else {
			p.result.RequeueAfter = notOwnedRecheck
		}
		return true, nil
	case p.revisionNotRecorded != nil:
		p.ready = &metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: "RevisionNotRecorded",
			Message: fmt.Sprintf("delivered to %d clusters, but %v", len(p.placed.Clusters), p.revisionNotRecorded)}
		p.err = p.revisionNotRecorded
		return true, nil
	case delivered.raced:
		p.result.RequeueAfter = conflictRetry
		return true, nil
	}
	if delivered.pending {
		// A work written moments ago was not looked at again: look once the write is no longer trusted
		// over the cache, in case no event of the work's comes first (someone deleted it meanwhile).
		p.requeueWithin(ownWriteFresh)
	}
	return false, nil
}

// deliveredReady ends a pass that delivered everything with Ready, and says when to look again with
// nothing changed.
func (r *AppConfigReconciler) deliveredReady(_ context.Context, p *appConfigPass) (bool, error) {
	for _, rc := range p.rendered {
		if len(rc.PatchTraits) > 0 {
			// A patch-trait controller may rewrite its ConfigMap without touching the trait, and the
			// hub watches traits, not every ConfigMap: look again now and then (reads only).
			p.requeueWithin(patchResync)
		}
	}
	if p.rollout.recheck > 0 {
		// A soak ends or a deadline passes with no report to bring the AppConfig back.
		p.requeueWithin(p.rollout.recheck)
	}
	clusters := len(p.placed.Clusters)
	ready := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: "Delivered",
		Message: fmt.Sprintf("delivered to %d clusters", clusters)}
	if notBound, ok := p.placed.notBoundReady(p.app.Namespace); ok {
		ready = notBound
	} else if len(p.placed.Refused) > 0 {
		ready.Message += fmt.Sprintf("; %d clusters the placement names are not bound (condition %s)", len(p.placed.Refused), v1alpha2.ConditionClustersBound)
	}
	p.ready, p.delivered = &ready, true
	return true, nil
}

// requeueWithin has the AppConfig looked at again within d at the latest.
func (p *appConfigPass) requeueWithin(d time.Duration) {
	if p.result.RequeueAfter == 0 || d < p.result.RequeueAfter {
		p.result.RequeueAfter = d
	}
}

// takeResume removes a rollout's resume request once the status written lifts the halt, so that a later
// halt of the same revision holds.
func (r *AppConfigReconciler) takeResume(ctx context.Context, p *appConfigPass) error {
	if !p.rollout.resumed || !p.delivered {
		return nil
	}
	patch := client.MergeFrom(p.app.DeepCopy())
	delete(p.app.Annotations, v1alpha2.AnnotationRolloutResume)
	if err := r.Client.Patch(ctx, p.app, patch); err != nil {
		return fmt.Errorf("remove annotation %s: %w", v1alpha2.AnnotationRolloutResume, err)
	}
	return nil
}
