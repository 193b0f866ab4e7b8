package agent_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
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
	return func(c *agentSetup) { c.EvictionGracePeriod = d }
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

// evictionRace is a work applied by an agent whose first DELETE on the spoke can be held.
type evictionRace struct {
	*agentFixture
	held    *heldSpokeDelete
	work    string
	amwName string
	amw     *workv1.AppliedManifestWork // as the agent created it
	cm      *corev1.ConfigMap           // ConfigMap a, as the work applied it
}

func startEvictionRace(t *testing.T, grace time.Duration, name string) *evictionRace {
	held := &heldSpokeDelete{}
	f := startAgent(t, withEvictionGracePeriod(grace), held.option())
	if _, err := f.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.cluster}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := &evictionRace{agentFixture: f, held: held, work: name + "-" + f.cluster}
	f.create(f.work(r.work, configMapA))
	f.waitWork(r.work, "applied", allApplied)
	r.amwName = agent.HubHash(f.cfg.Hub.Host) + "-" + r.work
	var err error
	if r.amw, err = f.spokeWk.WorkV1().AppliedManifestWorks().Get(t.Context(), r.amwName, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if r.cm, err = f.kube.CoreV1().ConfigMaps(f.cluster).Get(t.Context(), "a", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	return r
}

// forceDelete deletes the work on the hub without the agent, as eviction exists for.
func (r *evictionRace) forceDelete() {
	r.update(r.work, func(w *workv1.ManifestWork) { w.Finalizers = nil })
	r.deleteWork(r.work)
}

// recreate creates the work again on the hub; it is called while a request is held, off the test's
// goroutine, so it reports failures with Errorf.
func (r *evictionRace) recreate(t *testing.T) bool {
	if _, err := r.hub.WorkV1().ManifestWorks(r.cluster).Create(t.Context(), r.agentFixture.work(r.work, configMapA), metav1.CreateOptions{}); err != nil {
		t.Errorf("re-create work %s while eviction deletes: %v", r.work, err)
		return false
	}
	return true
}

// pollWork polls the work on the hub until cond holds on it or d passes.
func (r *evictionRace) pollWork(d time.Duration, cond func(*workv1.ManifestWork) bool) error {
	return wait.PollUntilContextTimeout(r.t.Context(), 50*time.Millisecond, d, true, func(ctx context.Context) (bool, error) {
		got, err := r.hub.WorkV1().ManifestWorks(r.cluster).Get(ctx, r.work, metav1.GetOptions{})
		return err == nil && cond(got), nil
	})
}

// A ManifestWork that comes back just as its grace period ends keeps its objects: an eviction round that
// found the work gone (on the hub too) but had deleted nothing yet deletes nothing, and the work ends
// Applied with the very objects it had, owned by the same AppliedManifestWork.
func TestEvictionThatLookedBeforeTheWorkCameBackDeletesNothing(t *testing.T) {
	const grace = 2 * time.Second
	r := startEvictionRace(t, grace, "back")

	// The first thing eviction deletes — whatever it is — waits until the work is back on the hub and
	// the agent has reported it Applied: eviction has decided, on what it saw before.
	r.held.hold(func(req *http.Request) bool {
		return strings.HasSuffix(req.URL.Path, "/appliedmanifestworks/"+r.amwName) || strings.Contains(req.URL.Path, "/namespaces/"+r.cluster+"/")
	}, func() {
		if r.recreate(t) {
			if err := r.pollWork(30*time.Second, allApplied); err != nil {
				t.Errorf("the re-created work was not reported Applied while eviction waited: %v", err)
			}
		}
	})
	r.forceDelete()
	r.held.wait(t, 60*time.Second)

	// Well past the grace period and over several eviction rounds: nothing of the work is deleted.
	r.consistently("the AppliedManifestWork and ConfigMap a stay", 2*grace, func(ctx context.Context) (bool, error) {
		got, err := r.spokeWk.WorkV1().AppliedManifestWorks().Get(ctx, r.amwName, metav1.GetOptions{})
		switch {
		case err != nil:
			return false, fmt.Errorf("AppliedManifestWork: %w", err)
		case got.UID != r.amw.UID || got.DeletionTimestamp != nil:
			return false, fmt.Errorf("AppliedManifestWork evicted under the delivered work: uid %s (was %s), deletionTimestamp %v", got.UID, r.amw.UID, got.DeletionTimestamp)
		}
		now, err := r.kube.CoreV1().ConfigMaps(r.cluster).Get(ctx, "a", metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return false, errors.New("ConfigMap a deleted under the delivered work")
		case err != nil:
			return false, err
		case now.UID != r.cm.UID:
			return false, fmt.Errorf("ConfigMap a deleted under the delivered work and created again (uid %s, was %s)", now.UID, r.cm.UID)
		case now.DeletionTimestamp != nil:
			return false, errors.New("ConfigMap a being deleted under the delivered work")
		}
		return true, nil
	})
	r.eventually("AppliedManifestWork no longer marked for eviction", func(ctx context.Context) (bool, error) {
		got, err := r.spokeWk.WorkV1().AppliedManifestWorks().Get(ctx, r.amwName, metav1.GetOptions{})
		return err == nil && got.Status.EvictionStartTime == nil, err
	})
	r.waitWork(r.work, "applied", allApplied)
	owned, err := r.kube.CoreV1().ConfigMaps(r.cluster).Get(t.Context(), "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(owned.OwnerReferences) != 1 || owned.OwnerReferences[0].UID != r.amw.UID {
		t.Errorf("ConfigMap a owners %v, want only AppliedManifestWork %s (%s)", owned.OwnerReferences, r.amwName, r.amw.UID)
	}
}

// A ManifestWork that comes back while eviction is removing its objects is not reported Applied on
// objects about to go: the agent waits until the old AppliedManifestWork is gone, then applies the work
// again under a fresh one.
func TestWorkBackWhileEvictionRemovesItsObjectsIsAppliedAfresh(t *testing.T) {
	const grace = 2 * time.Second
	r := startEvictionRace(t, grace, "afresh")

	r.held.hold(func(req *http.Request) bool {
		return strings.HasSuffix(req.URL.Path, "/namespaces/"+r.cluster+"/configmaps/a")
	}, func() {
		if !r.recreate(t) {
			return
		}
		// The agent has seen the work once it has put its finalizer on it.
		if err := r.pollWork(30*time.Second, func(w *workv1.ManifestWork) bool { return slices.Contains(w.Finalizers, workv1.ManifestWorkFinalizer) }); err != nil {
			t.Errorf("the agent did not take up the re-created work: %v", err)
			return
		}
		if err := r.pollWork(3*time.Second, func(w *workv1.ManifestWork) bool { return workCondition(w, workv1.WorkApplied, metav1.ConditionTrue) }); err == nil {
			t.Errorf("the work was reported Applied while eviction was removing its objects")
		}
	})
	r.forceDelete()
	r.held.wait(t, 60*time.Second)

	r.eventually("the evicted AppliedManifestWork gone and a fresh one in its place", func(ctx context.Context) (bool, error) {
		got, err := r.spokeWk.WorkV1().AppliedManifestWorks().Get(ctx, r.amwName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && got.UID != r.amw.UID && got.DeletionTimestamp == nil, err
	})
	r.waitWork(r.work, "applied", allApplied)
	fresh, err := r.spokeWk.WorkV1().AppliedManifestWorks().Get(t.Context(), r.amwName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned, err := r.kube.CoreV1().ConfigMaps(r.cluster).Get(t.Context(), "a", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ConfigMap a after the work came back: %v", err)
	}
	if len(owned.OwnerReferences) != 1 || owned.OwnerReferences[0].UID != fresh.UID {
		t.Errorf("ConfigMap a owners %v, want only the fresh AppliedManifestWork (%s)", owned.OwnerReferences, fresh.UID)
	}
}

// heldSpokeDelete holds the agent's first DELETE request to the spoke that matches, runs a function while
// it is held and then lets it go on: a point between a decision of the agent and its effect, where a
// test changes the world.
type heldSpokeDelete struct {
	armed atomic.Pointer[heldRequest]
	done  chan struct{}
}

type heldRequest struct {
	match func(*http.Request) bool
	while func()
}

// option wraps the agent's spoke transport.
func (h *heldSpokeDelete) option() agentOption {
	h.done = make(chan struct{})
	return func(c *agentSetup) {
		c.Spoke.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				if req.Method == http.MethodDelete {
					if held := h.armed.Load(); held != nil && held.match(req) && h.armed.CompareAndSwap(held, nil) {
						held.while()
						close(h.done)
					}
				}
				return rt.RoundTrip(req)
			})
		})
	}
}

// hold arms the hold: the next matching DELETE waits for while.
func (h *heldSpokeDelete) hold(match func(*http.Request) bool, while func()) {
	h.armed.Store(&heldRequest{match: match, while: while})
}

// wait waits until a request was held and let go.
func (h *heldSpokeDelete) wait(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-h.done:
	case <-time.After(d):
		t.Fatalf("the agent deleted nothing on the spoke within %s", d)
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
