package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
)

// DefaultEvictionGracePeriod is how long an AppliedManifestWork of this agent stays once nothing on its
// hub delivers it any more, as OCM's work agent waits by default.
const DefaultEvictionGracePeriod = time.Hour

// Eviction and the workers race when a ManifestWork comes back just as its grace period ends: eviction
// decided from its caches that the work is gone, while a worker adopts the AppliedManifestWork again and
// applies objects with it as their owner. They meet on the AppliedManifestWork's resourceVersion:
//
//   - eviction confirms with a live read of the hub that the work is gone, then claims the
//     AppliedManifestWork with a Delete preconditioned on the UID and resourceVersion it examined (the
//     finalizer keeps it, with a deletionTimestamp); only a claimed one loses its objects and finalizer;
//   - a worker that finds it marked for eviction unmarks it before applying anything (ensureAppliedWork),
//     which changes its resourceVersion: an eviction that looked before fails its precondition and
//     leaves it; a worker whose unmarking comes second fails on the resourceVersion instead and retries;
//   - a worker never applies with an AppliedManifestWork that is being deleted: it waits for it to go
//     (its deletion enqueues the work) and then creates a fresh one.
//
// So when both are done, either the work is delivered and its objects exist, owned by a live
// AppliedManifestWork, or the work is really gone and so are the objects it alone owned: never objects
// deleted under a work that then reports them Applied, never an AppliedManifestWork deleted while
// objects are applied with it as owner. The one assumption: a worker's cache is not behind by a whole
// grace period (eviction marks an AppliedManifestWork at least that long before it claims it).

// evictOrphans runs every interval until ctx is done: an AppliedManifestWork of this agent whose
// ManifestWork is gone from the hub without the agent finalizing it (its finalizer removed by hand, its
// namespace wiped), or that another hub delivered (the cluster moved to a new hub), is marked with
// status.evictionStartTime; once the grace period has passed since, the objects it alone owns are
// deleted, and then it is. One that is delivered again is unmarked.
func (c *controller) evictOrphans(ctx context.Context, grace, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if err := c.evictOnce(ctx, grace, time.Now()); err != nil && ctx.Err() == nil {
			c.log.Error(err, "evict AppliedManifestWorks no hub delivers")
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// evictionStep is what one round of eviction does with one AppliedManifestWork.
type evictionStep int

const (
	keepApplied     evictionStep = iota // delivered, or marked and still within the grace period
	markForEviction                     // no longer delivered: the grace period starts now
	unmarkEviction                      // marked, but delivered again
	evictNow                            // marked for longer than the grace period
)

// nextEvictionStep decides from what the caches show: whether the AppliedManifestWork's work is
// delivered, and when it was marked for eviction (nil: not marked).
func nextEvictionStep(delivered bool, marked *metav1.Time, now time.Time, grace time.Duration) evictionStep {
	switch {
	case delivered && marked != nil:
		return unmarkEviction
	case delivered:
		return keepApplied
	case marked == nil:
		return markForEviction
	case now.Sub(marked.Time) >= grace:
		return evictNow
	}
	return keepApplied
}

func (c *controller) evictOnce(ctx context.Context, grace time.Duration, now time.Time) error {
	amws, err := c.amwLister.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list AppliedManifestWorks: %w", err)
	}
	var errs []error
	for _, amw := range amws {
		if amw.Spec.AgentID != c.agentID {
			continue // another agent's
		}
		if amw.DeletionTimestamp != nil {
			// Claimed by an earlier round whose objects were still going, or deleted by hand: either
			// way a worker waits for it to go, so its removal is finished here.
			if slices.Contains(amw.Finalizers, workv1.AppliedManifestWorkFinalizer) {
				errs = append(errs, c.finishEviction(ctx, amw))
			}
			continue
		}
		delivered := false
		if amw.Spec.HubHash == c.hubHash {
			_, err := c.workLister.Get(amw.Spec.ManifestWorkName)
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("look up the ManifestWork of AppliedManifestWork %s: %w", amw.Name, err))
				continue
			}
			delivered = err == nil
		}
		switch nextEvictionStep(delivered, amw.Status.EvictionStartTime, now, grace) {
		case unmarkEviction:
			errs = append(errs, c.setEvictionStart(ctx, amw, nil))
		case markForEviction:
			c.log.Info("AppliedManifestWork no longer delivered by its hub; evicting it after the grace period",
				"appliedManifestWork", amw.Name, "gracePeriod", grace)
			errs = append(errs, c.setEvictionStart(ctx, amw, &metav1.Time{Time: now}))
		case evictNow:
			errs = append(errs, c.evict(ctx, amw))
		}
	}
	return errors.Join(errs...)
}

// evict removes an AppliedManifestWork that the caches showed orphaned past its grace period, if it still
// is when looked at live (see the comment at the top of this file).
func (c *controller) evict(ctx context.Context, examined *workv1.AppliedManifestWork) error {
	if examined.Spec.HubHash == c.hubHash {
		// The cache may be behind a work that has just come back.
		_, err := c.works.Get(ctx, examined.Spec.ManifestWorkName, metav1.GetOptions{})
		switch {
		case err == nil:
			c.log.Info("ManifestWork is on the hub again: not evicting its AppliedManifestWork",
				"appliedManifestWork", examined.Name, "work", examined.Spec.ManifestWorkName)
			return nil
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("evict AppliedManifestWork %s: confirm that ManifestWork %s is gone from the hub: %w",
				examined.Name, examined.Spec.ManifestWorkName, err)
		}
	}
	claimed, err := c.claimForEviction(ctx, examined)
	if err != nil || claimed == nil {
		return err
	}
	c.log.Info("evicting AppliedManifestWork no hub delivers", "appliedManifestWork", claimed.Name,
		"since", examined.Status.EvictionStartTime.Time)
	return c.finishEviction(ctx, claimed)
}

// claimForEviction deletes the AppliedManifestWork as eviction examined it, so that from here on no
// worker applies with it; its finalizer keeps it until its objects are gone. It returns the claimed
// AppliedManifestWork, or nil when it changed since it was examined (a worker adopted it again).
func (c *controller) claimForEviction(ctx context.Context, examined *workv1.AppliedManifestWork) (*workv1.AppliedManifestWork, error) {
	amw := examined
	if !slices.Contains(amw.Finalizers, workv1.AppliedManifestWorkFinalizer) {
		// Without the finalizer the Delete would remove it at once and leave its objects to the
		// garbage collector, which knows nothing of objects another work shares. The patch is guarded
		// by the resourceVersion examined, as the Delete is.
		finalizers := append(slices.Clone(amw.Finalizers), workv1.AppliedManifestWorkFinalizer)
		patched, err := c.amws.Patch(ctx, amw.Name, types.MergePatchType, finalizersPatch(amw.ObjectMeta, finalizers), metav1.PatchOptions{})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			c.changedSinceExamined(examined)
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("evict AppliedManifestWork %s: add its finalizer: %w", amw.Name, err)
		}
		amw = patched
	}
	uid, rv := amw.UID, amw.ResourceVersion
	err := c.amws.Delete(ctx, amw.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		c.changedSinceExamined(examined)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("evict AppliedManifestWork %s: delete it: %w", amw.Name, err)
	}
	claimed, err := c.amws.Get(ctx, amw.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil // its finalizer was removed meanwhile: nothing is left to remove
	}
	if err != nil {
		return nil, fmt.Errorf("evict AppliedManifestWork %s: read it after deleting it: %w", amw.Name, err)
	}
	if claimed.UID != uid {
		return nil, nil
	}
	return claimed, nil
}

func (c *controller) changedSinceExamined(examined *workv1.AppliedManifestWork) {
	c.log.Info("AppliedManifestWork changed since eviction examined it (its work came back?): not evicting it",
		"appliedManifestWork", examined.Name, "resourceVersion", examined.ResourceVersion)
}

// finishEviction removes the objects of a claimed AppliedManifestWork — every object it alone owns is
// deleted, shared ones lose its owner reference, as if its work were deleted with the default
// propagation — and then its finalizer. Objects still being deleted are waited for at the next round.
func (c *controller) finishEviction(ctx context.Context, amw *workv1.AppliedManifestWork) error {
	// (The work is gone, and with it its executor: what it alone applied goes with the agent's rights.)
	done, err := c.removeAppliedWork(ctx, c.dynamic, amw, evicted(amw), func(workv1.AppliedManifestResourceMeta) bool { return false })
	if err != nil {
		return fmt.Errorf("evict AppliedManifestWork %s: %w", amw.Name, err)
	}
	if done {
		c.log.Info("evicted AppliedManifestWork and the objects it alone owned", "appliedManifestWork", amw.Name)
	}
	return nil
}

func (c *controller) setEvictionStart(ctx context.Context, amw *workv1.AppliedManifestWork, start *metav1.Time) error {
	if _, err := c.patchAppliedWorkStatus(ctx, amw, map[string]any{"evictionStartTime": start}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("mark AppliedManifestWork %s for eviction: %w", amw.Name, err)
	}
	return nil
}
