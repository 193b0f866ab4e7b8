package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apply"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// Reasons of the Events ferry-agent records on the spoke objects it acts on, where `kubectl describe`
// and `kubectl get events` on the managed cluster show them.
const (
	// EventDriftReverted (Warning): the object was changed on the cluster in fields its work sets, and
	// the agent put them back.
	EventDriftReverted = "DriftReverted"
	// EventApplyFailed (Warning): the manifest could not be applied.
	EventApplyFailed = "ApplyFailed"
	// EventExecutorDenied (Warning): the work's executor may not do what the manifest asks.
	EventExecutorDenied = "ExecutorDenied"
	// EventDeleted: the agent deleted the object, its manifest having left the work or the work
	// having been deleted.
	EventDeleted = "Deleted"
	// EventEvicted: the agent deleted the object with its AppliedManifestWork, which no hub delivered
	// for the eviction grace period (eviction.go).
	EventEvicted = "Evicted"
	// EventOrphaned: the agent left the object on the cluster, no longer owned by its work, because the
	// work's deleteOption orphans it.
	EventOrphaned = "Orphaned"
)

// EventSource is the component the agent's Events name as their source.
const EventSource = "ferry-agent"

// spokeEvents records Events on the spoke's objects, through client-go's broadcaster: its correlator
// counts an Event repeated for the same object in one Event (count, lastTimestamp), folds many similar
// ones together and holds back an object's Events beyond a burst. A nil *spokeEvents records nothing:
// the agent runs without Events (--spoke-events=false). Every Event is about something the agent just
// did or found; a resync that changes nothing records none.
type spokeEvents struct {
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
}

// newSpokeEvents starts recording Events to the spoke's API server with kube; shutdown stops it.
func newSpokeEvents(kube kubernetes.Interface, log logr.Logger) *spokeEvents {
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: EventSource}).WithLogger(log)
	return &spokeEvents{broadcaster: broadcaster, recorder: recorder}
}

// shutdown stops the broadcaster and its goroutines; Events recorded afterwards are dropped.
func (e *spokeEvents) shutdown() {
	if e != nil {
		e.broadcaster.Shutdown()
	}
}

// record records an Event about obj. (client-go files an Event about a cluster-scoped object in
// namespace default.)
func (e *spokeEvents) record(obj *corev1.ObjectReference, typ, reason, message string) {
	if e == nil || obj == nil {
		return
	}
	e.recorder.Event(obj, typ, reason, eventMessage(message))
}

// maxEventMessage bounds an Event's message, as the API server bounds an events.k8s.io Event's note.
const maxEventMessage = 1024

// eventMessage fits msg into an Event, cut (at a character boundary) with a mark that says so: the
// work's status has the whole of an error.
func eventMessage(msg string) string {
	if len(msg) <= maxEventMessage {
		return msg
	}
	const mark = "… (cut; the ManifestWork's status has all of it)"
	return strings.ToValidUTF8(msg[:maxEventMessage-len(mark)], "") + mark
}

// objectReference is the reference an Event makes to a live object.
func objectReference(obj *unstructured.Unstructured) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(),
		Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()}
}

// manifestReference is the reference an Event makes to a manifest's object: the live object when the
// agent has it, else what the manifest names (no UID: it may not exist). nil for a manifest that names
// no object (one that could not be decoded).
func manifestReference(r *manifestResult) *corev1.ObjectReference {
	if r.exists() {
		return objectReference(r.result.Object)
	}
	if r.meta.Kind == "" || r.meta.Name == "" {
		return nil
	}
	return &corev1.ObjectReference{APIVersion: schema.GroupVersion{Group: r.meta.Group, Version: r.meta.Version}.String(),
		Kind: r.meta.Kind, Namespace: r.meta.Namespace, Name: r.meta.Name}
}

// recordApplyEvents records, for one pass of work's manifests, the Events of what happened to their
// objects: each drift put back, and each failure that is new — one the manifest's Applied condition in
// the work's status (what the last pass reported) does not say already — so that a manifest failing the
// same way at every resync records its failure once.
func (e *spokeEvents) recordApplyEvents(work *workv1.ManifestWork, results []manifestResult) {
	if e == nil {
		return
	}
	for i := range results {
		r := &results[i]
		if d := r.result.Drift; d != nil && r.err == nil {
			e.record(manifestReference(r), corev1.EventTypeWarning, EventDriftReverted, driftRevertedMessage(work.Name, d))
		}
		if r.err == nil || errors.Is(r.err, context.Canceled) || reportedAlready(work, r) {
			continue // (canceled: the agent is stopping, nothing failed)
		}
		reason := EventApplyFailed
		if isExecutorDenied(r.err) {
			reason = EventExecutorDenied
		}
		e.record(manifestReference(r), corev1.EventTypeWarning, reason, fmt.Sprintf("ManifestWork %s: %v", work.Name, r.err))
	}
}

// driftRevertedMessage is the message of a DriftReverted Event: who changed which fields. It holds no
// time and no count, so that the correlator counts the same change put back again in one Event (its
// count, and lastTimestamp); the manifest's Drifted condition on the work keeps the count for the
// work's generation.
func driftRevertedMessage(work string, d *apply.Drift) string {
	by, fields := workreport.ChangedBy(d.Managers, d.Fields, d.MoreFields)
	return fmt.Sprintf("Changed on the cluster by %s (%s), and put back as ManifestWork %s sets it", by, fields, work)
}

// reportedAlready reports whether the work's status already says, for the manifest's object at the
// work's generation, the Applied condition this pass ends with.
func reportedAlready(work *workv1.ManifestWork, r *manifestResult) bool {
	old := findManifest(work.Status.ResourceStatus.Manifests, r.meta.Ordinal)
	if old == nil || !workreport.SameObject(old.ResourceMeta, r.meta) {
		return false
	}
	was := meta.FindStatusCondition(old.Conditions, workv1.ManifestApplied)
	now := appliedCondition(r)
	return was != nil && was.ObservedGeneration == work.Generation &&
		was.Status == now.Status && was.Reason == now.Reason && was.Message == now.Message
}

// removal is why the agent removes a work's objects from the spoke, as their Events say.
type removal struct {
	work   string // the ManifestWork's name
	reason string // EventDeleted or EventEvicted
	// why completes "Deleted: ..." ("no longer in ManifestWork web").
	why string
	// deleteOption is the work's, which names why an object it orphans stays.
	deleteOption *workv1.DeleteOption
}

// manifestLeftWork: objects whose manifests left work are deleted.
func manifestLeftWork(work *workv1.ManifestWork) removal {
	return removal{work: work.Name, reason: EventDeleted, why: "no longer in ManifestWork " + work.Name, deleteOption: work.Spec.DeleteOption}
}

// workDeleted: work was deleted, and its objects with it.
func workDeleted(work *workv1.ManifestWork) removal {
	return removal{work: work.Name, reason: EventDeleted, why: "ManifestWork " + work.Name + " was deleted", deleteOption: work.Spec.DeleteOption}
}

// evicted: amw's work has been gone from every hub for the eviction grace period.
func evicted(amw *workv1.AppliedManifestWork) removal {
	return removal{work: amw.Spec.ManifestWorkName, reason: EventEvicted,
		why: fmt.Sprintf("no hub has delivered ManifestWork %s for the eviction grace period (AppliedManifestWork %s)", amw.Spec.ManifestWorkName, amw.Name)}
}

// deleted records that the agent deleted obj for why.
func (e *spokeEvents) deleted(obj *unstructured.Unstructured, why removal) {
	e.record(objectReference(obj), corev1.EventTypeNormal, why.reason, "Deleted: "+why.why)
}

// orphaned records that the agent left obj on the cluster, no longer owned by the work why names,
// because the work's deleteOption orphans it.
func (e *spokeEvents) orphaned(obj *unstructured.Unstructured, why removal) {
	policy := "Orphan"
	if why.deleteOption != nil {
		policy = string(why.deleteOption.PropagationPolicy)
	}
	e.record(objectReference(obj), corev1.EventTypeNormal, EventOrphaned, fmt.Sprintf(
		"Left on the cluster and no longer managed by ManifestWork %s: its deleteOption (%s) orphans it", why.work, policy))
}

// disowned records that the agent dropped work's owner reference from obj, which the work's
// deleteOption orphans since it was applied.
func (e *spokeEvents) disowned(obj *unstructured.Unstructured, work *workv1.ManifestWork) {
	e.record(objectReference(obj), corev1.EventTypeNormal, EventOrphaned, fmt.Sprintf(
		"No longer owned by ManifestWork %s: its deleteOption (%s) orphans it, so removing it from the work or deleting the work leaves it on the cluster",
		work.Name, work.Spec.DeleteOption.PropagationPolicy))
}
