package statusview

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// Reasons the view gives where the agent has said nothing.
const (
	// ReasonNotReported: the agent has not reported the manifest for the work's current generation.
	ReasonNotReported = "NotReported"
	// ReasonHealthNotReported: applied and present, but without Progressing and Degraded conditions,
	// e.g. from an agent that does not compute health.
	ReasonHealthNotReported = "HealthNotReported"
	// ReasonEarlierRevision: a workload of an earlier revision, kept for a rollout and not counted.
	ReasonEarlierRevision = "EarlierRevision"
)

// ForWork is the view of one ManifestWork: a row per manifest of its spec, with what its agent reported
// about the work's current generation.
func ForWork(mw *workv1.ManifestWork) Work {
	return workView(mw, nil)
}

// workView builds a work's view; current, when not empty, names (kind/name) the objects counted in the
// work's health — the others are an AppConfig's earlier revisions.
func workView(mw *workv1.ManifestWork, current map[string]bool) Work {
	gen := mw.Generation
	w := Work{
		Cluster:   mw.Namespace,
		Name:      mw.Name,
		Applied:   workreport.WorkStatus(mw.Status.Conditions, workv1.WorkApplied, gen),
		Available: workreport.WorkStatus(mw.Status.Conditions, workv1.WorkAvailable, gen),
		Manifests: []Manifest{},
	}
	reports := map[int32]*workv1.ManifestCondition{}
	for i := range mw.Status.ResourceStatus.Manifests {
		r := &mw.Status.ResourceStatus.Manifests[i]
		reports[r.ResourceMeta.Ordinal] = r
	}
	var healths []v1alpha2.Health
	fine := true
	for i := range mw.Spec.Workload.Manifests {
		m := manifestView(mw, int32(i), reports[int32(i)])
		if len(current) > 0 && !current[m.Kind+"/"+m.Name] {
			m.EarlierRevision = true
			if m.Reason == "" {
				m.Reason, m.Message = ReasonEarlierRevision, "an earlier revision kept for a rollout; not counted"
			}
		} else {
			healths = append(healths, m.Health)
			fine = fine && m.fine()
		}
		w.Manifests = append(w.Manifests, m)
	}
	w.Health = workreport.AggregateHealth(healths)
	// A work with nothing to count has nothing to wait for only when it has no manifests at all.
	w.Healthy = fine && (len(healths) > 0 || len(w.Manifests) == 0)
	return w
}

// manifestView is the row of the manifest at ordinal: its identity from the spec, its strategy from the
// work's manifestConfigs, its conditions and feedback from report (nil: none).
func manifestView(mw *workv1.ManifestWork, ordinal int32, report *workv1.ManifestCondition) Manifest {
	m := Manifest{Ordinal: ordinal}
	id, decodeErr := workreport.IdentifyManifest(mw.Spec.Workload.Manifests[ordinal])
	if decodeErr != nil && report != nil {
		// The agent could tell what it is (or says why it could not): take its word.
		id = report.ResourceMeta
	}
	m.Group, m.Version, m.Kind, m.Namespace, m.Name = id.Group, id.Version, id.Kind, id.Namespace, id.Name
	resource := id.Resource
	if report != nil && workreport.SameObject(report.ResourceMeta, id) && report.ResourceMeta.Resource != "" {
		resource = report.ResourceMeta.Resource
	}
	m.Strategy = strategyOf(mw.Spec.ManifestConfigs, workv1.ResourceIdentifier{Group: id.Group, Resource: resource, Namespace: id.Namespace, Name: id.Name})

	// A report about another object at this ordinal (the spec changed since) is no report of this one.
	if report == nil || !workreport.SameObject(report.ResourceMeta, id) {
		m.Applied, m.Available, m.Health = metav1.ConditionUnknown, metav1.ConditionUnknown, v1alpha2.HealthUnknown
		m.Reason, m.Message = ReasonNotReported, fmt.Sprintf("the agent has not reported this manifest for generation %d of the work yet", mw.Generation)
		if decodeErr != nil {
			m.Message = decodeErr.Error()
		}
		return m
	}
	// Read as the hub reads it for the AppConfig's status, so that the two never disagree.
	gen := mw.Generation
	r := workreport.ReadManifest(report.Conditions, gen)
	applied, available, unhealthy := r.AppliedCondition, r.AvailableCondition, r.Unhealthy
	m.Applied, m.Available, m.Health = r.Applied, r.Available, r.Health
	for _, v := range report.StatusFeedbacks.Values {
		m.Feedback = append(m.Feedback, workreport.FeedbackValue(v))
	}
	switch {
	case applied == nil:
		m.Reason, m.Message = ReasonNotReported, fmt.Sprintf("no Applied condition for generation %d of the work yet", gen)
	case applied.Status != metav1.ConditionTrue:
		m.Reason, m.Message = applied.Reason, applied.Message
	case unhealthy != nil:
		m.Reason, m.Message = unhealthy.Reason, unhealthy.Message
	case available != nil && available.Status != metav1.ConditionTrue:
		m.Reason, m.Message = available.Reason, available.Message
	case available == nil:
		m.Reason, m.Message = ReasonNotReported, fmt.Sprintf("no Available condition for generation %d of the work yet", gen)
	case m.Health == v1alpha2.HealthUnknown:
		m.Reason, m.Message = ReasonHealthNotReported, "no Progressing and Degraded conditions for the work's current generation"
	}
	return m
}

// strategyOf is the update strategy manifestConfigs give the object id names, read as the agent reads
// them (v1alpha2.ManifestConfigFor, wildcards included); Update when none sets one.
func strategyOf(configs []workv1.ManifestConfigOption, id workv1.ResourceIdentifier) string {
	if c := v1alpha2.ManifestConfigFor(configs, id); c != nil && c.UpdateStrategy != nil && c.UpdateStrategy.Type != "" {
		return string(c.UpdateStrategy.Type)
	}
	return string(workv1.UpdateStrategyTypeUpdate)
}
