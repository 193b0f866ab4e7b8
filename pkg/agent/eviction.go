package agent

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	workv1 "open-cluster-management.io/api/work/v1"
)

// DefaultEvictionGracePeriod is how long an AppliedManifestWork of this agent stays once nothing on its
// hub delivers it any more, as OCM's work agent waits by default.
const DefaultEvictionGracePeriod = time.Hour

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

func (c *controller) evictOnce(ctx context.Context, grace time.Duration, now time.Time) error {
	amws, err := c.amwLister.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, amw := range amws {
		if amw.Spec.AgentID != c.agentID {
			continue // another agent's
		}
		orphan := amw.Spec.HubHash != c.hubHash
		if !orphan {
			_, err := c.workLister.Get(amw.Spec.ManifestWorkName)
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			orphan = apierrors.IsNotFound(err)
		}
		start := amw.Status.EvictionStartTime
		switch {
		case !orphan && start != nil:
			if err := c.setEvictionStart(ctx, amw, nil); err != nil {
				return err
			}
		case orphan && start == nil:
			c.log.Info("AppliedManifestWork no longer delivered by its hub; evicting it after the grace period",
				"appliedManifestWork", amw.Name, "gracePeriod", grace)
			if err := c.setEvictionStart(ctx, amw, &metav1.Time{Time: now}); err != nil {
				return err
			}
		case orphan && now.Sub(start.Time) >= grace:
			// As if its work were deleted with the default propagation: every object it alone owns is
			// deleted, shared ones lose its owner reference; then it goes. Objects still being deleted
			// are waited for at the next round.
			done, err := c.removeAppliedWork(ctx, amw, func(workv1.AppliedManifestResourceMeta) bool { return false })
			if err != nil {
				return fmt.Errorf("evict AppliedManifestWork %s: %w", amw.Name, err)
			}
			if done {
				c.log.Info("evicted AppliedManifestWork and the objects it alone owned", "appliedManifestWork", amw.Name, "since", start.Time)
			}
		}
	}
	return nil
}

func (c *controller) setEvictionStart(ctx context.Context, amw *workv1.AppliedManifestWork, start *metav1.Time) error {
	amw = amw.DeepCopy()
	amw.Status.EvictionStartTime = start
	if _, err := c.amws.UpdateStatus(ctx, amw, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("mark AppliedManifestWork %s for eviction: %w", amw.Name, err)
	}
	return nil
}
