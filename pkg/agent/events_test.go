package agent_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/agent"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// ferry-agent records Events on the spoke objects it acts on, where `kubectl describe` on the managed
// cluster shows them.

func withSpokeEvents() agentOption {
	return func(c *agentSetup) { c.SpokeEvents = true }
}

// withEventWrites counts the Events the agent creates or patches on the spoke.
func withEventWrites(n *atomic.Int64) agentOption {
	return func(c *agentSetup) {
		c.Spoke = rest.CopyConfig(c.Spoke)
		c.Spoke.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				if req.Method != http.MethodGet && (strings.HasSuffix(req.URL.Path, "/events") || strings.Contains(req.URL.Path, "/events/")) {
					n.Add(1)
				}
				return rt.RoundTrip(req)
			})
		})
	}
}

// invalidConfigMap is a ConfigMap the API server refuses (a data key may not hold spaces): its apply
// fails the same way every time.
func invalidConfigMap(name string) string {
	return `{apiVersion: v1, kind: ConfigMap, metadata: {name: ` + name + `, namespace: "{{ns}}"}, data: {"not a key": "x"}}`
}

// spokeEvents lists the Events in the test's namespace on the spoke about the object named name, with
// reason.
func (f *agentFixture) spokeEvents(ctx context.Context, name, reason string) ([]corev1.Event, error) {
	list, err := f.kube.CoreV1().Events(f.cluster).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.name": name, "reason": reason, "source": agent.EventSource}.String()})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// describeEvents says what events are, for a failure message.
func describeEvents(events []corev1.Event) string {
	var out []string
	for _, e := range events {
		out = append(out, fmt.Sprintf("%s %s on %s %s (uid %q) x%d: %q", e.Type, e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.InvolvedObject.UID, e.Count, e.Message))
	}
	return "[" + strings.Join(out, "; ") + "]"
}

// waitSpokeEvent waits until there is exactly one Event about name with reason for which check holds,
// and returns it.
func (f *agentFixture) waitSpokeEvent(name, reason string, check func(*corev1.Event) bool) *corev1.Event {
	f.t.Helper()
	var found *corev1.Event
	f.eventually(fmt.Sprintf("an Event %s on %s", reason, name), func(ctx context.Context) (bool, error) {
		events, err := f.spokeEvents(ctx, name, reason)
		if err != nil || len(events) != 1 || !check(&events[0]) {
			return false, err
		}
		found = &events[0]
		return true, nil
	})
	return found
}

// markers counts the marker works of the package's tests, whose names must be unique on the spoke.
var markers atomic.Int64

// flushSpokeEvents makes sure every Event the agent recorded so far has reached the spoke (or been held
// back by client-go's correlator): it has the agent record one more, an ApplyFailed of a marker work
// delivered now, and waits for it. client-go's broadcaster sends Events one at a time in the order
// they were recorded, so those recorded before are sent by then. (No fixed wait could say that.)
func (f *agentFixture) flushSpokeEvents() {
	f.t.Helper()
	name := fmt.Sprintf("marker-%d", markers.Add(1))
	f.create(f.work(name+"-"+f.cluster, invalidConfigMap(name)))
	f.waitSpokeEvent(name, agent.EventApplyFailed, func(*corev1.Event) bool { return true })
}

// editReplicas sets the spoke's Deployment web to replicas as `kubectl edit` does, and returns its UID.
func (f *agentFixture) editReplicas(replicas int32) types.UID {
	f.t.Helper()
	var uid types.UID
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := f.liveDeployment("web")
		d.Spec.Replicas, uid = &replicas, d.UID
		_, err := f.kube.AppsV1().Deployments(f.cluster).Update(f.t.Context(), d, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return uid
}

// A `kubectl edit` of a delivered Deployment's replicas is put back, and the Deployment gets a Warning
// DriftReverted naming the manager and the field; the same edit again is counted in the same Event.
func TestDriftRevertedIsAnEventOnTheObject(t *testing.T) {
	var writes atomic.Int64
	f := startAgent(t, withResync(time.Hour), withSpokeEvents(), withEventWrites(&writes))
	w := f.create(f.work("events-drift", namespaceManifest, deploymentWeb))
	f.waitWork(w.Name, "applied", allApplied)

	for count := int32(1); count <= 2; count++ {
		uid := f.editReplicas(3)
		f.waitWork(w.Name, "the edit reported", func(w *workv1.ManifestWork) bool {
			d, ok := workreport.ReadDrift(manifestCondition(w, 1, workreport.ConditionDrifted))
			return ok && d.Count == int(count)
		})
		e := f.waitSpokeEvent("web", agent.EventDriftReverted, func(e *corev1.Event) bool { return e.Count == count })
		if e.InvolvedObject.UID != uid || e.InvolvedObject.Kind != "Deployment" || e.Type != corev1.EventTypeWarning ||
			!strings.Contains(e.Message, "kubectl-edit") || !strings.Contains(e.Message, ".spec.replicas") {
			t.Errorf("edit %d: Event %s %s on %s %s (uid %s): %q; want a Warning on Deployment uid %s naming kubectl-edit and .spec.replicas",
				count, e.Type, e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.InvolvedObject.UID, e.Message, uid)
		}
	}
	if writes.Load() == 0 {
		t.Error("no Event write was counted: the count the test without Events relies on counts nothing")
	}
}

// Without --spoke-events the agent records nothing. The agent's client to the spoke counts every Event
// it writes, until the agent has stopped: once agent.Start has returned nothing of the agent runs that
// could write one later, so zero is the whole truth, not a sample.
func TestNoSpokeEventsWhenTurnedOff(t *testing.T) {
	var writes atomic.Int64
	f := startAgent(t, withResync(time.Hour), withEventWrites(&writes))
	w := f.create(f.work("events-off", namespaceManifest, configMapA, configMapB, invalidConfigMap("bad")))
	f.waitWork(w.Name, "applied but the invalid ConfigMap", func(w *workv1.ManifestWork) bool {
		return hasCondition(w, 1, workv1.ManifestApplied, metav1.ConditionTrue) && hasCondition(w, 3, workv1.ManifestApplied, metav1.ConditionFalse)
	})
	f.editConfigMap("a", "edited")
	f.waitWork(w.Name, "the edit reported", func(w *workv1.ManifestWork) bool {
		_, ok := workreport.ReadDrift(manifestCondition(w, 1, workreport.ConditionDrifted))
		return ok
	})
	f.update(w.Name, func(w *workv1.ManifestWork) { w.Spec.Workload.Manifests = w.Spec.Workload.Manifests[:2] })
	f.eventually("configmap b deleted", func(context.Context) (bool, error) { return !f.configMapExists("b"), nil })
	f.stop()
	if n := writes.Load(); n != 0 {
		t.Errorf("the agent without Events wrote %d Events", n)
	}
	for _, reason := range []string{agent.EventDriftReverted, agent.EventApplyFailed, agent.EventDeleted} {
		for _, name := range []string{"a", "b", "bad"} {
			if events, err := f.spokeEvents(t.Context(), name, reason); err != nil || len(events) > 0 {
				t.Errorf("Events %s on %s: %s %v", reason, name, describeEvents(events), err)
			}
		}
	}
}

// A manifest the API server refuses gets one ApplyFailed Event with the error: its apply failing the
// same way at every resync after adds nothing.
func TestApplyFailedIsAnEventOnceForTheSameFailure(t *testing.T) {
	f := startAgent(t, withResync(100*time.Millisecond), withSpokeEvents())
	w := f.create(f.work("events-failed", namespaceManifest, invalidConfigMap("bad")))
	f.waitWork(w.Name, "the invalid ConfigMap failed", func(w *workv1.ManifestWork) bool {
		return hasCondition(w, 1, workv1.ManifestApplied, metav1.ConditionFalse)
	})
	e := f.waitSpokeEvent("bad", agent.EventApplyFailed, func(*corev1.Event) bool { return true })
	if e.Type != corev1.EventTypeWarning || e.InvolvedObject.Kind != "ConfigMap" || e.InvolvedObject.UID != "" ||
		!strings.Contains(e.Message, "ManifestWork events-failed") || !strings.Contains(e.Message, "is invalid") {
		t.Errorf("Event %s on %s %s (uid %q): %q; want a Warning on ConfigMap bad naming the work and the API server's refusal",
			e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.InvolvedObject.UID, e.Message)
	}

	f.waitResyncs(5, 2)
	f.flushSpokeEvents()
	events, err := f.spokeEvents(t.Context(), "bad", agent.EventApplyFailed)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Count != 1 {
		t.Errorf("after 5 resyncs failing the same way, ApplyFailed Events %s; want one, counted once", describeEvents(events))
	}
}

// A deleted work whose deleteOption orphans some of its objects leaves each of them with one Orphaned
// Event, however many passes its deletion takes, and the objects it deletes with a Deleted Event.
func TestDeletedWorkRecordsDeletedAndOrphanedEvents(t *testing.T) {
	f := startAgent(t, withSpokeEvents())
	w := f.work("events-orphan", namespaceManifest, configMapA, configMapB)
	w.Spec.DeleteOption = f.orphaningConfigMapAAndItsNamespace()
	f.create(w)
	f.waitWork(w.Name, "applied", allApplied)
	a, b := f.liveConfigMap("a"), f.liveConfigMap("b")
	f.deleteWork(w.Name)
	f.waitWorkGone(w.Name)
	// The work's deletion took at least two passes: one deletes b, a later one finds it gone.
	f.flushSpokeEvents()

	orphaned, err := f.spokeEvents(t.Context(), "a", agent.EventOrphaned)
	if err != nil {
		t.Fatal(err)
	}
	if len(orphaned) != 1 || orphaned[0].Count != 1 || orphaned[0].InvolvedObject.UID != a.UID ||
		!strings.Contains(orphaned[0].Message, "ManifestWork events-orphan") || !strings.Contains(orphaned[0].Message, "SelectivelyOrphan") {
		t.Errorf("Orphaned Events on ConfigMap a (uid %s): %s; want one, once, naming the work and its deleteOption", a.UID, describeEvents(orphaned))
	}
	deleted, err := f.spokeEvents(t.Context(), "b", agent.EventDeleted)
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 1 || deleted[0].Count != 1 || deleted[0].InvolvedObject.UID != b.UID ||
		!strings.Contains(deleted[0].Message, "ManifestWork events-orphan was deleted") {
		t.Errorf("Deleted Events on ConfigMap b (uid %s): %s; want one, once, saying the work was deleted", b.UID, describeEvents(deleted))
	}
	if kept, err := f.spokeEvents(t.Context(), "a", agent.EventDeleted); err != nil || len(kept) > 0 {
		t.Errorf("Deleted Events on ConfigMap a, which was kept: %s %v", describeEvents(kept), err)
	}
}
