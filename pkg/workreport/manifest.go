package workreport

import (
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// ManifestConditionTypes are the conditions of a manifest a report is judged by.
var ManifestConditionTypes = []string{workv1.ManifestApplied, workv1.ManifestAvailable, workv1.ManifestProgressing, workv1.ManifestDegraded}

// ManifestConditionTypesRead are every condition of a manifest this package reads: those a report is
// judged by, and Drifted (DriftOf).
var ManifestConditionTypesRead = append(slices.Clone(ManifestConditionTypes), ConditionDrifted)

// Manifest is what an agent's report of one manifest says about a work's generation.
type Manifest struct {
	// Applied and Available are the statuses of the manifest's conditions of those types; Unknown when
	// not reported for the generation.
	Applied, Available metav1.ConditionStatus
	// Health is what its Progressing and Degraded conditions say (Health).
	Health v1alpha2.Health
	// AppliedCondition and AvailableCondition are the conditions behind Applied and Available, nil when
	// the agent has not reported one for the generation; Unhealthy is the Degraded or Progressing
	// condition that makes Health not Healthy (nil when Healthy or Unknown). They point into the
	// conditions read, to explain a verdict without copying them.
	AppliedCondition, AvailableCondition, Unhealthy *metav1.Condition
}

// ReadManifest reads a manifest's conditions conds, as its agent reported them, about the work's
// generation gen. It allocates nothing: the hub reads every manifest of every work of a fleet with it.
func ReadManifest(conds []metav1.Condition, gen int64) Manifest {
	r := Manifest{
		AppliedCondition:   manifestCondition(conds, workv1.ManifestApplied, gen),
		AvailableCondition: manifestCondition(conds, workv1.ManifestAvailable, gen),
	}
	r.Applied, r.Available = statusOf(r.AppliedCondition), statusOf(r.AvailableCondition)
	r.Health, r.Unhealthy = Health(conds, gen)
	return r
}

// Fine: the manifest is applied, present and healthy.
func (r Manifest) Fine() bool { return v1alpha2.Fine(r.Applied, r.Available, r.Health) }

// manifestCondition is a manifest's condition typ when it is about generation gen. Agents that do not
// record the generation in a manifest's Applied and Available (observedGeneration 0, as OCM's older
// agents) are taken at their word; a work's own conditions are not (WorkCondition), and neither are
// health conditions (Health), which only agents that record it report.
func manifestCondition(conds []metav1.Condition, typ string, gen int64) *metav1.Condition {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil || (c.ObservedGeneration != 0 && c.ObservedGeneration != gen) {
		return nil
	}
	return c
}

// Health is what a manifest's Progressing and Degraded conditions about the work's generation gen say,
// and the condition that makes it unhealthy (nil when Healthy or not reported).
func Health(conds []metav1.Condition, gen int64) (v1alpha2.Health, *metav1.Condition) {
	degraded, progressing := aboutGeneration(conds, workv1.ManifestDegraded, gen), aboutGeneration(conds, workv1.ManifestProgressing, gen)
	switch {
	case degraded != nil && degraded.Status == metav1.ConditionTrue:
		return v1alpha2.Degraded, degraded
	case progressing != nil && progressing.Status == metav1.ConditionTrue:
		return v1alpha2.Progressing, progressing
	case degraded != nil && progressing != nil && degraded.Status == metav1.ConditionFalse && progressing.Status == metav1.ConditionFalse:
		return v1alpha2.Healthy, nil
	}
	return v1alpha2.HealthUnknown, nil
}

// Explains reports whether a manifest's condition c explains a verdict that is not fine: Applied not
// True, or Progressing or Degraded True. Its message is what a person reads of it.
func Explains(c metav1.Condition) bool {
	switch c.Type {
	case workv1.ManifestApplied:
		return c.Status != metav1.ConditionTrue
	case workv1.ManifestProgressing, workv1.ManifestDegraded:
		return c.Status == metav1.ConditionTrue
	}
	return false
}

// MessageRead reports whether the message of a manifest's condition c is read: one that Explains a
// verdict, or a True Drifted condition, whose message is its report (DriftOf). A manifest that is fine
// and never drifted has no message read.
func MessageRead(c metav1.Condition) bool {
	return Explains(c) || (c.Type == ConditionDrifted && c.Status == metav1.ConditionTrue)
}

// AggregateHealth is the health of several objects: Degraded when any is, else Progressing when any is,
// Healthy when all are (and there is one), else Unknown.
func AggregateHealth(hs []v1alpha2.Health) v1alpha2.Health {
	switch {
	case len(hs) == 0:
		return v1alpha2.HealthUnknown
	case slices.Contains(hs, v1alpha2.Degraded):
		return v1alpha2.Degraded
	case slices.Contains(hs, v1alpha2.Progressing):
		return v1alpha2.Progressing
	case slices.Contains(hs, v1alpha2.HealthUnknown):
		return v1alpha2.HealthUnknown
	}
	return v1alpha2.Healthy
}

// FeedbackValue is an agent's status feedback value as text, the way a person reads it.
func FeedbackValue(v workv1.FeedbackValue) v1alpha2.FeedbackValue {
	out := v1alpha2.FeedbackValue{Name: v.Name}
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
