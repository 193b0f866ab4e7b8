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
	crds      *crdTracker    // the spoke's CRDs: authoritative mappings, and works waiting for a kind

	// the results of our own writes, until the informers have them
	freshWorks *fresher[*workv1.ManifestWork]
	freshAMWs  *fresher[*workv1.AppliedManifestWork]
	// each manifest's last apply that wrote nothing, taken again while its object is unchanged
	settled *settledObjects

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
		if _, unreachable := connectionErrorHost(err); unreachable {
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

// reconcile brings one ManifestWork and the spoke in line.
func (c *controller) reconcile(ctx context.Context, name string) (nextStep, error) {
	work, err := c.workLister.Get(name)
	if apierrors.IsNotFound(err) {
		c.freshWorks.forget(name)
		c.freshAMWs.forget(c.appliedWorkName(name))
		// Deleted with its finalizer in place means we finalized it; deleted without (forced) leaves
		// its AppliedManifestWork, and its objects, alone until the eviction grace period has passed
		// (evictOrphans): a work that comes back in the meantime finds them as they were.
		if c.watches != nil {
			c.watches.forget(name)
		}
		c.crds.forget(name)
		c.settled.forget(name)
		return nextStep{}, nil
	}
	if err != nil {
		return nextStep{}, err
	}
	work = c.freshWorks.pick(work)
	if work.DeletionTimestamp != nil {
		return c.finalize(ctx, work)
	}
	if workComplete(work) && slices.Contains(work.Finalizers, workv1.ManifestWorkFinalizer) {
		// Done (see completion.go): nothing of it is applied or removed, and its status stays as it
		// was when it completed, until it is deleted.
		return nextStep{}, nil
	}
	// The hub's finalizer and the spoke's AppliedManifestWork do not depend on each other: one round
	// trip instead of two, which is most of a new work's latency.
	var amw *workv1.AppliedManifestWork
	var amwErr error
	var beside errgroup.Group // errors are kept apart: each is handled on its own below
	read := work
	beside.Go(func() error {
		amw, amwErr = c.ensureAppliedWork(ctx, read)
		return nil
	})
	work, err = c.ensureFinalizer(ctx, work)
	_ = beside.Wait()
	if err != nil {
		return nextStep{}, fmt.Errorf("add finalizer: %w", err)
	}
	if amwErr != nil {
		var taken *appliedWorkOfAnotherClusterError
		if errors.As(amwErr, &taken) {
			// Nothing to retry until a person acts: say so on the work, and look again at resync.
			if err := c.reportNotApplied(ctx, work, ReasonAppliedWorkOfAnotherCluster, taken.Error()); err != nil {
				return nextStep{}, fmt.Errorf("update status: %w", err)
			}
			return nextStep{after: c.resync}, nil
		}
		return nextStep{}, fmt.Errorf("ensure AppliedManifestWork: %w", amwErr)
	}

	results, next := c.applyAll(ctx, work, amw)
	if c.watches != nil {
		c.watches.track(work.Name, results)
	}
	// Likewise the spoke's record of what was applied and the hub's status.
	var removing bool
	var record errgroup.Group
	record.Go(func() error {
		var err error
		removing, err = c.syncAppliedWork(ctx, work, amw, results)
		return err
	})
	statusErr := c.updateStatus(ctx, work, results)
	if err := record.Wait(); err != nil {
		return nextStep{}, err
	}
	if statusErr != nil {
		return nextStep{}, fmt.Errorf("update status: %w", statusErr)
	}
	if removing && !next.retry && (next.after == 0 || next.after > removalCheck) {
		// Objects that left the work are no longer watched for it: look again soon to see them gone.
		next.after = removalCheck
	}
	if !next.retry && next.after == 0 {
		next.after = c.resync
	}
	return next, nil
}
