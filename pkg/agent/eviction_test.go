package agent_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/agent"
)

func withEvictionGracePeriod(d time.Duration) agentOption {
	return func(c *agent.Config) { c.EvictionGracePeriod = d }
}

// A ManifestWork deleted on the hub without the agent (its finalizer removed by hand) leaves its
// objects on the spoke for the grace period, marked for eviction; then they go.
func TestWorkDeletedWithoutTheAgentIsEvictedAfterTheGracePeriod(t *testing.T) {
	const grace = 3 * time.Second
	f := startAgent(t, withEvictionGracePeriod(grace))
	if _, err := f.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.cluster}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := f.create(f.work("evicted-"+f.cluster, configMapA))
	f.waitWork(w.Name, "applied", allApplied)
	amwName := agent.HubHash(f.cfg.Hub.Host) + "-" + w.Name

	// Forced away on the hub: the finalizer removed, then deleted.
	f.update(w.Name, func(w *workv1.ManifestWork) { w.Finalizers = nil })
	f.deleteWork(w.Name)
	f.waitWorkGone(w.Name)
	var marked time.Time
	f.eventually("AppliedManifestWork marked for eviction", func(ctx context.Context) (bool, error) {
		amw, err := f.spokeWk.WorkV1().AppliedManifestWorks().Get(ctx, amwName, metav1.GetOptions{})
		if err != nil || amw.Status.EvictionStartTime == nil {
			return false, err
		}
		marked = amw.Status.EvictionStartTime.Time
		return true, nil
	})
	if !f.configMapExists("a") {
		t.Fatal("ConfigMap a deleted as soon as its work went: the grace period is for the work to come back")
	}
	f.eventually("AppliedManifestWork evicted and ConfigMap a gone", func(ctx context.Context) (bool, error) {
		_, err := f.spokeWk.WorkV1().AppliedManifestWorks().Get(ctx, amwName, metav1.GetOptions{})
		return apierrors.IsNotFound(err) && !f.configMapExists("a"), nil
	})
	// Whole seconds: the mark is a metav1.Time.
	if waited := time.Since(marked); waited < grace-time.Second {
		t.Errorf("evicted %s after the mark, before the grace period of %s", waited, grace)
	}
}

// The cluster moved to another hub: the AppliedManifestWorks this agent made for the old one are
// evicted after the grace period, and their objects with them, except those a current work holds too;
// another agent's are left alone.
func TestAppliedWorkOfAnotherHubIsEvictedAfterTheGracePeriod(t *testing.T) {
	const grace = 2 * time.Second
	f := startAgent(t, withEvictionGracePeriod(grace))
	if _, err := f.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.cluster}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// What the agent left of the old hub, made here as it would have: an AppliedManifestWork owning
	// ConfigMap old and, with a work of the current hub, ConfigMap a.
	amw := func(name, agentID string) *workv1.AppliedManifestWork {
		created, err := f.spokeWk.WorkV1().AppliedManifestWorks().Create(t.Context(), &workv1.AppliedManifestWork{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       workv1.AppliedManifestWorkSpec{HubHash: "old-hub", AgentID: agentID, ManifestWorkName: name},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return created
	}
	mine, others := amw("old-hub-"+f.cluster, f.cfg.AgentID), amw("old-hub-other-"+f.cluster, "another-agent")
	ownedBy := func(a *workv1.AppliedManifestWork) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "work.open-cluster-management.io/v1", Kind: "AppliedManifestWork", Name: a.Name, UID: a.UID}
	}
	for name, owners := range map[string][]metav1.OwnerReference{"old": {ownedBy(mine)}, "a": {ownedBy(mine)}, "others": {ownedBy(others)}} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners}, Data: map[string]string{"k": "1"}}
		if _, err := f.kube.CoreV1().ConfigMaps(f.cluster).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w := f.create(f.work("current-"+f.cluster, configMapA))
	f.waitWork(w.Name, "applied", allApplied)

	f.eventually("the old hub's AppliedManifestWork evicted, with what only it owned", func(ctx context.Context) (bool, error) {
		_, err := f.spokeWk.WorkV1().AppliedManifestWorks().Get(ctx, mine.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err) && !f.configMapExists("old"), nil
	})
	cm, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(t.Context(), "a", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ConfigMap a, which the current work holds, went with the old hub's AppliedManifestWork: %v", err)
	}
	f.eventually("ConfigMap a loses only the old owner", func(ctx context.Context) (bool, error) {
		cm, err = f.kube.CoreV1().ConfigMaps(f.cluster).Get(ctx, "a", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, o := range cm.OwnerReferences {
			if o.UID == mine.UID {
				return false, nil
			}
		}
		return len(cm.OwnerReferences) == 1, nil
	})
	// Another agent's stays, and so does what it owns, well past the grace period.
	f.consistently("another agent's AppliedManifestWork stays", grace+time.Second, func(ctx context.Context) (bool, error) {
		got, err := f.spokeWk.WorkV1().AppliedManifestWorks().Get(ctx, others.Name, metav1.GetOptions{})
		if err != nil || got.UID != others.UID || got.Status.EvictionStartTime != nil || !f.configMapExists("others") {
			return false, fmt.Errorf("AppliedManifestWork %v (error %v), ConfigMap others there: %t", got, err, f.configMapExists("others"))
		}
		return true, nil
	})
	if err := f.spokeWk.WorkV1().AppliedManifestWorks().Delete(t.Context(), others.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptrUID(others.UID)}}); err != nil {
		t.Fatal(err)
	}
}

func ptrUID(u types.UID) *types.UID { return &u }

// consistently polls cond every 50ms for d and fails the test as soon as it does not hold.
func (f *agentFixture) consistently(what string, d time.Duration, cond func(ctx context.Context) (bool, error)) {
	f.t.Helper()
	err := wait.PollUntilContextTimeout(f.t.Context(), 50*time.Millisecond, d, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(f.t.Context()) // not ctx: its deadline ends the period, it is not a failure
		if err == nil && !ok {
			err = errors.New("no longer holds")
		}
		return false, err
	})
	if !wait.Interrupted(err) {
		f.t.Fatalf("%s: %v", what, err)
	}
}
