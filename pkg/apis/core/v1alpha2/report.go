package v1alpha2

import (
	"encoding/json"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	workv1 "open-cluster-management.io/api/work/v1"
)

// CurrentObjects are the kind/name of the workloads and traits an AppConfig renders now: the objects
// whose reports count towards its clusters' Applied, Available and health (a rollout's earlier
// revisions do not). The hub's status and `kubectl ferry` both use it.
func CurrentObjects(workloads []WorkloadStatus) map[string]bool {
	out := map[string]bool{}
	for _, w := range workloads {
		out[w.Reference.Kind+"/"+w.Reference.Name] = true
		for _, t := range w.Traits {
			out[t.Reference.Kind+"/"+t.Reference.Name] = true
		}
	}
	return out
}

// The reading below is the one the hub's AppConfig status and `kubectl ferry` both judge a
// ManifestWork's report by, so that they never disagree about the same report.

// WorkConditionStatus is the status of the work's own condition typ (Applied, Available) about the
// work's generation gen; Unknown when missing or about another generation, since a verdict on an earlier
// spec says nothing about the current one.
func WorkConditionStatus(conds []metav1.Condition, typ string, gen int64) metav1.ConditionStatus {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil || c.ObservedGeneration != gen {
		return metav1.ConditionUnknown
	}
	return c.Status
}

// ManifestReport is what an agent's report of one manifest says about a work's generation. It is a
// reading, not a stored type: no deepcopy.
// +kubebuilder:object:generate=false
type ManifestReport struct {
	// Applied and Available are the statuses of the manifest's conditions of those types; Unknown when
	// not reported for the generation.
	Applied, Available metav1.ConditionStatus
	// Health is what its Progressing and Degraded conditions say (ManifestHealth).
	Health Health
	// AppliedCondition and AvailableCondition are the conditions behind Applied and Available, nil when
	// the agent has not reported one for the generation; Unhealthy is the Degraded or Progressing
	// condition that makes Health not Healthy (nil when Healthy or Unknown). They point into the
	// conditions read, to explain a verdict without copying them.
	AppliedCondition, AvailableCondition, Unhealthy *metav1.Condition
}

// ReadManifestReport reads a manifest's conditions conds, as its agent reported them, about the work's
// generation gen. It allocates nothing: the hub reads every manifest of every work of a fleet with it.
func ReadManifestReport(conds []metav1.Condition, gen int64) ManifestReport {
	r := ManifestReport{
		AppliedCondition:   manifestCondition(conds, workv1.ManifestApplied, gen),
		AvailableCondition: manifestCondition(conds, workv1.ManifestAvailable, gen),
	}
	r.Applied, r.Available = statusOf(r.AppliedCondition), statusOf(r.AvailableCondition)
	r.Health, r.Unhealthy = ManifestHealth(conds, gen)
	return r
}

// Fine: the manifest is applied, present and healthy.
func (r ManifestReport) Fine() bool { return Fine(r.Applied, r.Available, r.Health) }

// Fine: the manifest is applied, present and healthy.
func (m ManifestStatus) Fine() bool { return Fine(m.Applied, m.Available, m.Health) }

// Fine: the cluster's current objects are all applied, present and healthy.
func (cs ClusterStatus) Fine() bool { return Fine(cs.Applied, cs.Available, cs.Health) }

// Fine is what a person or a script waits for of an object, or of all of a cluster's: applied (True),
// present (Available True) and Healthy. Unknown is not fine: an unreported object may not be there.
func Fine(applied, available metav1.ConditionStatus, health Health) bool {
	return applied == metav1.ConditionTrue && available == metav1.ConditionTrue && health == Healthy
}

// manifestCondition is a manifest's condition typ when it is about generation gen. Agents that do not
// record the generation in a manifest's conditions (observedGeneration 0, as OCM's older agents) are
// taken at their word; a work's own conditions are not (WorkConditionStatus).
func manifestCondition(conds []metav1.Condition, typ string, gen int64) *metav1.Condition {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil || (c.ObservedGeneration != 0 && c.ObservedGeneration != gen) {
		return nil
	}
	return c
}

// statusOf is the status of c, Unknown when there is none.
func statusOf(c *metav1.Condition) metav1.ConditionStatus {
	if c == nil {
		return metav1.ConditionUnknown
	}
	return c.Status
}

// FeedbackValueOf is an agent's status feedback value as text, the way a person reads it.
func FeedbackValueOf(v workv1.FeedbackValue) FeedbackValue {
	out := FeedbackValue{Name: v.Name}
	switch f := v.Value; {
	case f.Integer != nil:
		out.Value = strconv.FormatInt(*f.Integer, 10)
	case f.String != nil:
		out.Value = *f.String
	case f.Boolean != nil:
		out.Value = strconv.FormatBool(*f.Boolean)
	case f.JsonRaw != nil:
		out.Value = *f.JsonRaw
	}
	return out
}

// IdentifyManifest reads what object a manifest of a work is from its content, its resource guessed
// from its kind as the hub does for a kind it cannot map (an agent's report names the real one). The
// ordinal is left for the caller, which knows it.
func IdentifyManifest(manifest workv1.Manifest) (workv1.ManifestResourceMeta, error) {
	raw := manifest.Raw
	if raw == nil && manifest.Object != nil {
		var err error
		if raw, err = json.Marshal(manifest.Object); err != nil {
			return workv1.ManifestResourceMeta{}, fmt.Errorf("encode manifest: %w", err)
		}
	}
	var obj struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return workv1.ManifestResourceMeta{}, fmt.Errorf("decode manifest: %w", err)
	}
	gv, err := schema.ParseGroupVersion(obj.APIVersion)
	if err != nil {
		return workv1.ManifestResourceMeta{}, fmt.Errorf("decode manifest: %w", err)
	}
	gvk := gv.WithKind(obj.Kind)
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return workv1.ManifestResourceMeta{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Resource: plural.Resource,
		Name: obj.Metadata.Name, Namespace: obj.Metadata.Namespace}, nil
}
