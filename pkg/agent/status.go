package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/agent/health"
	"github.com/ferry-mc/ferry/pkg/apply"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// Condition reasons. Where Open Cluster Management has a reason for a state, it is used as is.
const (
	ReasonAppliedManifestComplete = workv1.AppliedManifestComplete
	ReasonAppliedManifestFailed   = workv1.AppliedManifestFailed
	ReasonApplyConflict           = "ApplyConflict"
	ReasonSSAIgnoreFieldError     = workv1.AppliedManifestSSAIgnoreFieldError
	// ReasonApplyOnceSkipped: an ApplyOnceForce object deleted on the spoke is left deleted.
	ReasonApplyOnceSkipped = "ApplyOnceSkipped"
	// ReasonWaitingForCRD: a custom resource waits for its CustomResourceDefinition to be Established
	// and served.
	ReasonWaitingForCRD = "WaitingForCustomResourceDefinition"
	// ReasonUnknownKind: nothing on the spoke serves the manifest's kind (no CRD, a typo in apiVersion
	// or kind); the manifest is applied as soon as a CRD brings the kind.
	ReasonUnknownKind = "UnknownKind"

	ReasonResourceAvailable    = "ResourceAvailable"
	ReasonResourceNotAvailable = "ResourceNotAvailable"

	ConditionStatusFeedbackSynced = "StatusFeedbackSynced"
	ReasonStatusFeedbackSynced    = "StatusFeedbackSynced"
	ReasonStatusFeedbackFailed    = "StatusFeedbackSyncFailed"
	// ReasonNoStatusFeedback: StatusFeedbackSynced of a manifest without feedback rules (OCM's reason).
	ReasonNoStatusFeedback = "NoStatusFeedbackSynced"

	ReasonWorkApplied      = "AppliedManifestWorkComplete"
	ReasonWorkApplyFailed  = "AppliedManifestWorkFailed"
	ReasonWorkApplying     = "AppliedManifestWorkProgressing"
	ReasonWorkAvailable    = "ResourcesAvailable"
	ReasonWorkNotAvailable = "ResourcesNotAvailable"
)

// updateStatus writes the work's status when, and only when, it changed.
func (c *controller) updateStatus(ctx context.Context, work *workv1.ManifestWork, results []manifestResult) error {
	status := buildStatus(work, results)
	if equality.Semantic.DeepEqual(status, work.Status) {
		return nil
	}
	_, err := c.patchStatus(ctx, work, status)
	return err
}

// patchStatus writes status as the work's status by a merge patch (statusPatch), and returns the work
// written.
func (c *controller) patchStatus(ctx context.Context, work *workv1.ManifestWork, status workv1.ManifestWorkStatus) (*workv1.ManifestWork, error) {
	patch, err := statusPatch(work, status)
	if err != nil {
		return nil, err
	}
	updated, err := c.works.Patch(ctx, work.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return nil, err
	}
	c.freshWorks.wrote(work.ResourceVersion, updated)
	return updated, nil
}

// statusPatch builds the merge patch that turns work's status into status. It carries no
// resourceVersion: only this agent writes the status, and the hub writing the spec meanwhile must not
// make it fail (the conditions say which generation they observed). The work's UID is in it, so that
// the patch cannot land on another work of the same name. OCM's agent builds its status patch the same
// way (sdk-go's patcher: an old → new merge patch with the UID) but by default also sends the
// resourceVersion, and retries when the hub wrote meanwhile; Ferry deliberately does not.
func statusPatch(work *workv1.ManifestWork, status workv1.ManifestWorkStatus) ([]byte, error) {
	before, err := json.Marshal(map[string]any{"status": work.Status})
	if err != nil {
		return nil, fmt.Errorf("encode the status of ManifestWork %s: %w", work.Name, err)
	}
	after, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": work.UID}, "status": status})
	if err != nil {
		return nil, fmt.Errorf("encode the status of ManifestWork %s: %w", work.Name, err)
	}
	patch, err := jsonpatch.CreateMergePatch(before, after)
	if err != nil {
		return nil, fmt.Errorf("build the status patch of ManifestWork %s: %w", work.Name, err)
	}
	return patch, nil
}

// ManifestOutcome is what became of one manifest of a work on the spoke, in the terms its status reports.
type ManifestOutcome struct {
	// Meta identifies the manifest (ordinal) and the object it is, with its resource.
	Meta workv1.ManifestResourceMeta
	// Config is the work's manifestConfig for the object (nil: none): its feedback rules decide what
	// feedback is reported.
	Config *workv1.ManifestConfigOption
	// Present: the object is on the spoke.
	Present bool
	// Err is why the manifest could not be applied (nil: it was).
	Err error
	// Health is the object's health conditions (Progressing, Degraded, and those of conditionRules),
	// about the work's generation.
	Health []metav1.Condition
	// Feedback is what the feedback rules read from the object, and FeedbackErr why some could not.
	Feedback    []workv1.FeedbackValue
	FeedbackErr error
}

// BuildStatus is the status ferry-agent writes for work when its manifests came to outcomes (one per
// manifest, in spec order), each condition's lastTransitionTime kept from work's status where its
// status did not change. It is the agent's own status builder, for callers that must report exactly as
// the agent does without applying anything: the fleet simulator of bench-fleet.
func BuildStatus(work *workv1.ManifestWork, outcomes []ManifestOutcome) workv1.ManifestWorkStatus {
	results := make([]manifestResult, len(outcomes))
	for i, o := range outcomes {
		r := &results[i]
		r.meta, r.config, r.err = o.Meta, o.Config, o.Err
		r.health, r.feedback, r.feedbackErr = o.Health, o.Feedback, o.FeedbackErr
		r.result.Operation = apply.Unchanged
		if o.Present {
			r.result.Object = presentObject(o.Meta)
		}
	}
	return buildStatus(work, results)
}

// presentObject stands for an object that is on the spoke, where only its presence is reported.
func presentObject(m workv1.ManifestResourceMeta) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: m.Group, Version: m.Version, Kind: m.Kind})
	obj.SetNamespace(m.Namespace)
	obj.SetName(m.Name)
	return obj
}

// buildStatus computes the status for this round's results, keeping each condition's
// lastTransitionTime when its status did not change.
func buildStatus(work *workv1.ManifestWork, results []manifestResult) workv1.ManifestWorkStatus {
	gen := work.Generation
	previous := map[int32][]metav1.Condition{}
	for _, m := range work.Status.ResourceStatus.Manifests {
		previous[m.ResourceMeta.Ordinal] = m.Conditions
	}
	status := workv1.ManifestWorkStatus{Conditions: slices.Clone(work.Status.Conditions)}
	now := time.Now()
	var failed, waiting, unavailable []string
	for i := range results {
		r := &results[i]
		mc := workv1.ManifestCondition{ResourceMeta: r.meta, Conditions: slices.Clone(previous[r.meta.Ordinal])}
		// Conditions of a different object at this ordinal do not carry over.
		if old := findManifest(work.Status.ResourceStatus.Manifests, r.meta.Ordinal); old != nil && !workreport.SameObject(old.ResourceMeta, r.meta) {
			mc.Conditions = nil
		}
		applied := appliedCondition(r)
		applied.ObservedGeneration = gen
		meta.SetStatusCondition(&mc.Conditions, applied)
		setManifestDrift(&mc.Conditions, r.result.Drift, gen, now)
		setManifestDiff(&mc.Conditions, r, gen)
		switch applied.Status {
		case metav1.ConditionFalse:
			failed = append(failed, describeManifest(r))
		case metav1.ConditionUnknown:
			waiting = append(waiting, describeManifest(r))
		}
		available := metav1.Condition{Type: workv1.ManifestAvailable, Status: metav1.ConditionTrue, Reason: ReasonResourceAvailable,
			Message: "Resource is available", ObservedGeneration: gen}
		if !r.exists() {
			available.Status, available.Reason, available.Message = metav1.ConditionFalse, ReasonResourceNotAvailable, "Resource is not available"
			unavailable = append(unavailable, describeManifest(r))
		}
		meta.SetStatusCondition(&mc.Conditions, available)
		// As OCM's agent: StatusFeedbackSynced is set whenever the object could be read (with a reason
		// of its own when the manifest has no feedback rules), and left as it was when it could not.
		if r.exists() {
			synced := metav1.Condition{Type: ConditionStatusFeedbackSynced, Status: metav1.ConditionTrue, Reason: ReasonNoStatusFeedback,
				Message: "The manifest has no status feedback rules", ObservedGeneration: gen}
			if r.config != nil && len(r.config.FeedbackRules) > 0 {
				mc.StatusFeedbacks.Values = r.feedback
				synced.Reason, synced.Message = ReasonStatusFeedbackSynced, "Status feedback is synced"
				if r.feedbackErr != nil {
					synced.Status, synced.Reason, synced.Message = metav1.ConditionFalse, ReasonStatusFeedbackFailed, r.feedbackErr.Error()
				}
			}
			meta.SetStatusCondition(&mc.Conditions, synced)
		}
		if r.exists() || !r.completed {
			// (A completed object since cleaned up on the spoke keeps the health it finished with:
			// Complete stays True, so that it is not applied again.)
			setHealth(&mc.Conditions, r.health)
		}
		status.ResourceStatus.Manifests = append(status.ResourceStatus.Manifests, mc)
	}
	setHealth(&status.Conditions, restrictBuiltInComplete(health.Aggregate(status.ResourceStatus.Manifests, gen), results))
	setWorkDrift(&status.Conditions, status.ResourceStatus.Manifests, gen)
	setWorkDiff(&status.Conditions, status.ResourceStatus.Manifests, gen, reportOnly(work))

	workApplied := metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: ReasonWorkApplied,
		Message: "Apply manifest work complete", ObservedGeneration: gen}
	switch {
	case len(failed) > 0:
		workApplied.Status, workApplied.Reason = metav1.ConditionFalse, ReasonWorkApplyFailed
		workApplied.Message = fmt.Sprintf("Failed to apply %d of %d manifests: %s", len(failed), len(results), strings.Join(failed, ", "))
	case len(waiting) > 0:
		workApplied.Status, workApplied.Reason = metav1.ConditionUnknown, ReasonWorkApplying
		workApplied.Message = "Waiting to apply: " + strings.Join(waiting, ", ")
	}
	meta.SetStatusCondition(&status.Conditions, workApplied)
	workAvailable := metav1.Condition{Type: workv1.WorkAvailable, Status: metav1.ConditionTrue, Reason: ReasonWorkAvailable,
		Message: "All resources are available", ObservedGeneration: gen}
	if len(unavailable) > 0 {
		workAvailable.Status, workAvailable.Reason = metav1.ConditionFalse, ReasonWorkNotAvailable
		workAvailable.Message = fmt.Sprintf("%d of %d resources are not available: %s", len(unavailable), len(results), strings.Join(unavailable, ", "))
	}
	meta.SetStatusCondition(&status.Conditions, workAvailable)
	return status
}

// appliedCondition is the Applied condition of one manifest.
func appliedCondition(r *manifestResult) metav1.Condition {
	c := metav1.Condition{Type: workv1.ManifestApplied}
	switch {
	case r.waiting != "":
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, ReasonWaitingForCRD, r.waiting
	case apply.IsConflict(r.err):
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonApplyConflict, r.err.Error()
	case apply.IsUnknownKind(r.err):
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonUnknownKind, r.err.Error()
	case isObjectOwnedByAnotherWork(r.err):
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonObjectOwnedByAnotherWork, r.err.Error()
	case apply.IsIgnoreFieldError(r.err):
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonSSAIgnoreFieldError, r.err.Error()
	case r.err != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonAppliedManifestFailed, r.err.Error()
	case r.completed:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonAppliedManifestComplete, "Apply manifest complete; the resource is Complete, so it is no longer applied"
	case r.result.Operation == apply.Skipped && r.result.Object == nil && r.readOnly():
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonAppliedManifestFailed, "ReadOnly: the object does not exist on the cluster"
	case r.result.Operation == apply.Skipped && r.result.Object == nil:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonApplyOnceSkipped, r.result.Message
	case r.result.Operation == apply.Skipped:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonAppliedManifestComplete, "Apply manifest complete; "+r.result.Message
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonAppliedManifestComplete, "Apply manifest complete"
	}
	return c
}

func describeManifest(r *manifestResult) string { return describeMeta(r.meta) }

// describeMeta names a manifest's object as a person would: "Deployment ns/web", "Namespace ns".
func describeMeta(m workv1.ManifestResourceMeta) string {
	if m.Kind == "" {
		return fmt.Sprintf("manifest %d", m.Ordinal)
	}
	if m.Namespace != "" {
		return fmt.Sprintf("%s %s/%s", m.Kind, m.Namespace, m.Name)
	}
	return fmt.Sprintf("%s %s", m.Kind, m.Name)
}

func findManifest(ms []workv1.ManifestCondition, ordinal int32) *workv1.ManifestCondition {
	for i := range ms {
		if ms[i].ResourceMeta.Ordinal == ordinal {
			return &ms[i]
		}
	}
	return nil
}

// setHealth makes the health conditions of conditions exactly current: each set (its transition time
// kept when its status did not change), and any other health condition, of a rule since removed or of
// an object since gone, dropped.
func setHealth(conditions *[]metav1.Condition, current []metav1.Condition) {
	*conditions = slices.DeleteFunc(*conditions, func(c metav1.Condition) bool {
		return health.IsHealthCondition(c) && !slices.ContainsFunc(current, func(n metav1.Condition) bool { return n.Type == c.Type })
	})
	for _, c := range current {
		meta.SetStatusCondition(conditions, c)
	}
}
