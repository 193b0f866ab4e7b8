package fleetsim

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/agent"
	"github.com/ferry-mc/ferry/pkg/agent/feedback"
	"github.com/ferry-mc/ferry/pkg/agent/health"
)

// Health is the state a simulated agent reports for a work's objects.
type Health string

const (
	// Healthy: every object applied, present and current (a Deployment with all replicas ready).
	Healthy Health = "healthy"
	// Degraded: every object applied and present, but the work's workloads failed (a Deployment past
	// its progress deadline, no replica ready).
	Degraded Health = "degraded"
)

// Status is the status ferry-agent writes for w when its objects are in state h, condition for
// condition: per manifest Applied, Available, StatusFeedbackSynced with the WellKnownStatus values
// where the work asks for feedback, and the health conditions Progressing and Degraded; for the work
// Applied, Available, and the manifests' health aggregated as the agent aggregates it. Every condition
// is about w's generation and changed at now.
func Status(w *Work, h Health, now time.Time) workv1.ManifestWorkStatus {
	gen := w.Generation
	at := metav1.NewTime(now.Truncate(time.Second)) // what the API stores of it
	condition := func(typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: gen, LastTransitionTime: at}
	}
	degraded := degradedOrdinals(w, h)
	var status workv1.ManifestWorkStatus
	for _, m := range w.Manifests {
		failed := degraded[m.Meta.Ordinal]
		mc := workv1.ManifestCondition{ResourceMeta: m.Meta, Conditions: []metav1.Condition{
			condition(workv1.ManifestApplied, metav1.ConditionTrue, agent.ReasonAppliedManifestComplete, "Apply manifest complete"),
			condition(workv1.ManifestAvailable, metav1.ConditionTrue, agent.ReasonResourceAvailable, "Resource is available"),
		}}
		if m.Feedback {
			mc.StatusFeedbacks.Values = feedbackValues(m, failed)
			mc.Conditions = append(mc.Conditions, condition(agent.ConditionStatusFeedbackSynced, metav1.ConditionTrue,
				agent.ReasonStatusFeedbackSynced, "Status feedback is synced"))
		}
		// As the agent reads the object with kstatus: current, or failed (Degraded, and Progressing still,
		// as pkg/agent/health reports a failure).
		if failed {
			msg := "Resource failed"
			if m.Meta.Kind == "Deployment" {
				msg = "Progress deadline exceeded"
			}
			mc.Conditions = append(mc.Conditions,
				condition(workv1.ManifestProgressing, metav1.ConditionTrue, health.ReasonFailed, msg),
				condition(workv1.ManifestDegraded, metav1.ConditionTrue, health.ReasonFailed, msg))
		} else {
			msg := "Resource is current"
			if m.Meta.Kind == "Deployment" {
				msg = fmt.Sprintf("Deployment is available. Replicas: %d", m.Replicas)
			}
			mc.Conditions = append(mc.Conditions,
				condition(workv1.ManifestProgressing, metav1.ConditionFalse, health.ReasonCurrent, msg),
				condition(workv1.ManifestDegraded, metav1.ConditionFalse, health.ReasonCurrent, msg))
		}
		status.ResourceStatus.Manifests = append(status.ResourceStatus.Manifests, mc)
	}
	for _, c := range health.Aggregate(status.ResourceStatus.Manifests, gen) {
		c.LastTransitionTime = at
		meta.SetStatusCondition(&status.Conditions, c)
	}
	status.Conditions = append(status.Conditions,
		condition(workv1.WorkApplied, metav1.ConditionTrue, agent.ReasonWorkApplied, "Apply manifest work complete"),
		condition(workv1.WorkAvailable, metav1.ConditionTrue, agent.ReasonWorkAvailable, "All resources are available"))
	return status
}

// degradedOrdinals are the manifests a Degraded work reports as failed: its workloads (the manifests
// it asks feedback of), or its first manifest when it asks none.
func degradedOrdinals(w *Work, h Health) map[int32]bool {
	out := map[int32]bool{}
	if h != Degraded || len(w.Manifests) == 0 {
		return out
	}
	for _, m := range w.Manifests {
		if m.Feedback {
			out[m.Meta.Ordinal] = true
		}
	}
	if len(out) == 0 {
		out[w.Manifests[0].Meta.Ordinal] = true
	}
	return out
}

// feedbackValues are the WellKnownStatus values the agent reports for m: the replica counters of a
// Deployment or StatefulSet, none ready when it failed. Kinds whose well-known fields are not replica
// counters report nothing.
func feedbackValues(m Manifest, failed bool) []workv1.FeedbackValue {
	ready := m.Replicas
	if failed {
		ready = 0
	}
	counters := map[string]int64{"ReadyReplicas": ready, "AvailableReplicas": ready, "Replicas": m.Replicas}
	gvk := schema.GroupVersionKind{Group: m.Meta.Group, Version: m.Meta.Version, Kind: m.Meta.Kind}
	var out []workv1.FeedbackValue
	for _, path := range feedback.WellKnownPaths(gvk) {
		if v, ok := counters[path.Name]; ok {
			out = append(out, workv1.FeedbackValue{Name: path.Name, Value: workv1.FieldValue{Type: workv1.Integer, Integer: &v}})
		}
	}
	return out
}
