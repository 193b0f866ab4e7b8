package fleetsim

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// Status is the status ferry-agent writes for w when its objects are in state h: built by the agent's
// own status builder (agent.BuildStatus) from what the agent would have found — every object applied
// and present, the WellKnownStatus feedback values where the work asks for feedback, and the health
// conditions its health evaluator gives the objects in state h (spokeObject). Every condition is about
// w's generation and changed at now.
func Status(w *Work, h Health, now time.Time) workv1.ManifestWorkStatus {
	gen := w.Generation
	degraded := degradedOrdinals(w, h)
	outcomes := make([]agent.ManifestOutcome, 0, len(w.Manifests))
	for _, m := range w.Manifests {
		failed := degraded[m.Meta.Ordinal]
		o := agent.ManifestOutcome{Meta: m.Meta, Present: true, Health: healthOf.Conditions(spokeObject(m, failed), nil, gen)}
		if m.Feedback {
			o.Config = &wellKnownFeedback
			o.Feedback = feedbackValues(m, failed)
		}
		outcomes = append(outcomes, o)
	}
	status := agent.BuildStatus(&workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Generation: gen}}, outcomes)
	// The builder stamps a new condition with the time it runs; a simulated report is dated when it is
	// sent, in the whole seconds the API stores.
	at := metav1.NewTime(now.Truncate(time.Second))
	for i := range status.Conditions {
		status.Conditions[i].LastTransitionTime = at
	}
	for i := range status.ResourceStatus.Manifests {
		for j := range status.ResourceStatus.Manifests[i].Conditions {
			status.ResourceStatus.Manifests[i].Conditions[j].LastTransitionTime = at
		}
	}
	return status
}

// healthOf is the agent's health evaluator (kstatus, and CEL for conditionRules; safe for concurrent use).
var healthOf = health.New()

// spokeObject is the object of manifest m as the spoke would hold it, settled (failed: false) or failed.
// A Deployment carries the status its controller writes: every replica ready and available, or none
// and past its progress deadline. Any other kind is as created; a failed one says so with kstatus's
// Stalled condition.
func spokeObject(m Manifest, failed bool) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: m.Meta.Group, Version: m.Meta.Version, Kind: m.Meta.Kind})
	obj.SetNamespace(m.Meta.Namespace)
	obj.SetName(m.Meta.Name)
	obj.SetGeneration(1)
	switch {
	case m.Meta.Group == "apps" && m.Meta.Kind == "Deployment":
		ready := m.Replicas
		progressing := map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}
		available := map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}
		if failed {
			ready = 0
			progressing = map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}
			available = map[string]any{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"}
		}
		obj.Object["spec"] = map[string]any{"replicas": m.Replicas}
		obj.Object["status"] = map[string]any{"observedGeneration": int64(1), "replicas": m.Replicas, "updatedReplicas": m.Replicas,
			"readyReplicas": ready, "availableReplicas": ready, "conditions": []any{available, progressing}}
	case failed:
		obj.Object["status"] = map[string]any{"conditions": []any{
			map[string]any{"type": "Stalled", "status": "True", "reason": "Failed", "message": "Resource failed"}}}
	case m.Meta.Group == "" && m.Meta.Kind == "Service":
		obj.Object["spec"] = map[string]any{"type": "ClusterIP"}
	}
	return obj
}

// wellKnownFeedback is the manifestConfig of a manifest whose WellKnownStatus feedback the hub asks:
// the builder reports feedback for a manifest with feedback rules.
var wellKnownFeedback = workv1.ManifestConfigOption{FeedbackRules: []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}}}

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
