package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/workqueue"
	workv1client "open-cluster-management.io/api/client/work/clientset/versioned/typed/work/v1"
	worklisters "open-cluster-management.io/api/client/work/listers/work/v1"

	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/agent/feedback"
	"github.com/ferry-mc/ferry/pkg/agent/health"
	"github.com/ferry-mc/ferry/pkg/apply"
)

// controller reconciles the ManifestWorks of one cluster namespace on the hub with the spoke: it applies
// their manifests, tracks what it applied in AppliedManifestWorks, removes what left a work, and
// reports status back to the hub.
type controller struct {
	// health computes each applied object's health conditions.
	health  *health.Evaluator
	cluster string // the managed cluster's name: the hub namespace of its ManifestWorks
	hubHash string // identifies the hub, so AppliedManifestWorks of several hubs do not collide
	agentID string

	works      workv1client.ManifestWorkInterface // hub, the cluster namespace
	workLister worklisters.ManifestWorkNamespaceLister
	amws       workv1client.AppliedManifestWorkInterface // spoke
	amwLister  worklisters.AppliedManifestWorkLister

	dynamic dynamic.Interface // spoke
	mapper  meta.RESTMapper
	applier *apply.Applier
	// executors holds works to their spec.executor: checked, or applied as (see executor.go)
	executors *executors
	feedback  *feedback.Evaluator
	watches   *objectWatches // nil: no event-driven status
	events    *spokeEvents   // nil: no Events on the spoke's objects
	crds      *crdTracker    // the spoke's CRDs: authoritative mappings, and works waiting for a kind

	// the results of our own writes, until the informers have them
	freshWorks *writeThroughCache[*workv1.ManifestWork]
	freshAMWs  *writeThroughCache[*workv1.AppliedManifestWork]
	// each manifest's last apply that wrote nothing, taken again while its object is unchanged
	settled *unchangedApplyCache

	queue  workqueue.TypedRateLimitingInterface[string]
	resync time.Duration // how often a work is reconciled with nothing changed, to pick up drift and status
	log    logr.Logger
}

// run processes the queue with n workers until ctx is done, and returns once they have stopped.
func (c *controller) run(ctx context.Context, workers int) {
	defer reportWorks(c.workLister)()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
}

func (c *controller) processNext(ctx context.Context) bool {
	name, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(name)
	next, err := c.reconcile(ctx, name)
	switch {
	case errors.Is(err, errAppliedWorkBeingDeleted):
		// Eviction (or a person) is deleting the work's AppliedManifestWork: its deletion event brings
		// the work back to be applied afresh; the requeue is a fallback.
		c.log.Info("waiting for the work's AppliedManifestWork to be deleted", "work", name)
		c.queue.AddAfter(name, 5*time.Second)
	case err != nil:
		if !errors.Is(err, context.Canceled) {
			c.log.Error(err, "reconcile ManifestWork", "work", name)
		}
		if _, unreachable := ConnectionErrorHost(err); unreachable {
			// An API server that is down: the work is tried again every few seconds rather than with
			// a backoff that grows to a minute, so that it is applied soon after the server is back.
			c.queue.Forget(name)
			c.queue.AddAfter(name, outageRetry)
			break
		}
		c.queue.AddRateLimited(name)
	case next.retry:
		// A manifest met a condition that resolves itself (a conflict, a server error): back off.
		c.queue.AddRateLimited(name)
	default:
		c.queue.Forget(name)
		if next.after > 0 {
			c.queue.AddAfter(name, next.after)
		}
	}
	return true
}

// outageRetry is how often a work is tried again while an API server it needs cannot be reached.
const outageRetry = 5 * time.Second

// removalCheck is how soon a work is looked at again while objects that left it are being deleted.
const removalCheck = time.Second

// nextStep says when to look at a work again.
type nextStep struct {
	retry bool          // requeue with backoff
	after time.Duration // requeue after this long (0: only on events)
}

// enqueue adds a work by name.
func (c *controller) enqueue(name string) { c.queue.Add(name) }

// enqueueAfter adds a work by name after d.
func (c *controller) enqueueAfter(name string, d time.Duration) { c.queue.AddAfter(name, d) }

// reconcile brings one ManifestWork and the spoke in line: a pass of the work through the agent's
// reconcilers, in turn, until one of them ends it.
func (c *controller) reconcile(ctx context.Context, name string) (nextStep, error) {
	p := &reconcileState{name: name}
	for _, step := range c.reconcilers() {
		done, err := step.run(ctx, p)
		if err != nil {
			return nextStep{}, err
		}
		if done {
			return p.next, nil
		}
	}
	return p.next, nil
}

// reconcileState is one pass of a ManifestWork through the reconcilers: what each finds there and leaves
// for the next.
type reconcileState struct {
	name string
	work *workv1.ManifestWork        // from the informer (or the agent's own writeThroughCache write)
	amw  *workv1.AppliedManifestWork // the spoke's record of it, once ensured
	// results are the manifests' applies, in spec order, once applied.
	results []manifestResult
	// removing: objects that left the work are being deleted from the spoke.
	removing bool
	next     nextStep
}

// reconciler is one small step of a pass. done ends the pass with p.next; an error ends it too.
type reconciler struct {
	name string
	run  func(ctx context.Context, p *reconcileState) (done bool, err error)
}

// reconcilers are the steps of a pass, in order. Each reads what the earlier ones left in the pass.
func (c *controller) reconcilers() []reconciler {
	return []reconciler{
		{"read", c.readWork},             // a work gone: forget it
		{"finalize", c.finalizeDeleted},  // a work being deleted: remove what it applied
		{"completed", holdCompleted},     // a completed work: nothing more to do
		{"prepare", c.prepare},           // the hub's finalizer and the spoke's AppliedManifestWork
		{"apply", c.applyManifests},      // every manifest, under its strategy
		{"report", c.recordAndReport},    // what was applied (spoke) and the status (hub), one patch
		{"schedule", c.scheduleNextPass}, // when to look again with nothing changed
	}
}

// readWork takes the work from the informer. A work that is gone ends the pass: what the agent kept
// for it is forgotten. Deleted with its finalizer in place means it was finalized; deleted without
// (forced) leaves its AppliedManifestWork, and its objects, alone until the eviction grace period has
// passed (evictOrphans): a work that comes back in the meantime finds them as they were.
func (c *controller) readWork(_ context.Context, p *reconcileState) (bool, error) {
	work, err := c.workLister.Get(p.name)
	if apierrors.IsNotFound(err) {
		c.freshWorks.forget(p.name)
		c.freshAMWs.forget(c.appliedWorkName(p.name))
		if c.watches != nil {
			c.watches.forget(p.name)
		}
		c.crds.forget(p.name)
		c.settled.forget(p.name)
		return true, nil
	}
	if err != nil {
		return true, err
	}
	p.work = c.freshWorks.pick(work)
	return false, nil
}

// finalizeDeleted removes what a work being deleted applied, then lets it go (finalize.go).
func (c *controller) finalizeDeleted(ctx context.Context, p *reconcileState) (bool, error) {
	if p.work.DeletionTimestamp == nil {
		return false, nil
	}
	next, err := c.finalize(ctx, p.work)
	p.next = next
	return true, err
}

// holdCompleted ends the pass of a work that is done (see completion.go): nothing of it is applied or
// removed, and its status stays as it was when it completed, until it is deleted.
func holdCompleted(_ context.Context, p *reconcileState) (bool, error) {
	return workComplete(p.work) && slices.Contains(p.work.Finalizers, workv1.ManifestWorkFinalizer), nil
}

// prepare puts the hub's finalizer on the work and makes sure of the spoke's AppliedManifestWork. The
// two do not depend on each other: one round trip instead of two, which is most of a new work's
// latency.
func (c *controller) prepare(ctx context.Context, p *reconcileState) (bool, error) {
	var amwErr error
	var beside errgroup.Group // errors are kept apart: each is handled on its own below
	read := p.work
	beside.Go(func() error {
		p.amw, amwErr = c.ensureAppliedWork(ctx, read)
		return nil
	})
	work, err := c.ensureFinalizer(ctx, p.work)
	_ = beside.Wait()
	if err != nil {
		return true, fmt.Errorf("add finalizer: %w", err)
	}
	p.work = work
	if amwErr != nil {
		var taken *appliedWorkOfAnotherClusterError
		if errors.As(amwErr, &taken) {
			// Nothing to retry until a person acts: say so on the work, and look again at resync.
			if err := c.reportNotApplied(ctx, p.work, ReasonAppliedWorkOfAnotherCluster, taken.Error()); err != nil {
				return true, fmt.Errorf("update status: %w", err)
			}
			p.next = nextStep{after: c.resync}
			return true, nil
		}
		return true, fmt.Errorf("ensure AppliedManifestWork: %w", amwErr)
	}
	return false, nil
}

// applyManifests applies every manifest of the work and watches what they became.
func (c *controller) applyManifests(ctx context.Context, p *reconcileState) (bool, error) {
	p.results, p.next = c.applyAll(ctx, p.work, p.amw)
	c.events.recordApplyEvents(p.work, p.results)
	if c.watches != nil {
		c.watches.track(p.work.Name, p.results)
	}
	return false, nil
}

// recordAndReport records on the spoke what the work applied (and removes what left it), and reports
// the results to the hub in one status patch; the two do not depend on each other.
func (c *controller) recordAndReport(ctx context.Context, p *reconcileState) (bool, error) {
	var record errgroup.Group
	record.Go(func() error {
		var err error
		p.removing, err = c.syncAppliedWork(ctx, p.work, p.amw, p.results)
		return err
	})
	statusErr := c.updateStatus(ctx, p.work, p.results)
	if err := record.Wait(); err != nil {
		return true, err
	}
	if statusErr != nil {
		return true, fmt.Errorf("update status: %w", statusErr)
	}
	return false, nil
}

// scheduleNextPass says when the work is looked at again if nothing changes meanwhile.
func (c *controller) scheduleNextPass(_ context.Context, p *reconcileState) (bool, error) {
	p.next = nextPassAfter(p.next, p.removing, c.resync)
	return true, nil
}

// nextPassAfter is when a pass that asked for next looks at its work again: soon while objects that
// left the work are being deleted (they are no longer watched for it), at resync when nothing else
// asked for sooner.
func nextPassAfter(next nextStep, removing bool, resync time.Duration) nextStep {
	if removing && !next.retry && (next.after == 0 || next.after > removalCheck) {
		next.after = removalCheck
	}
	if !next.retry && next.after == 0 {
		next.after = resync
	}
	return next
}
