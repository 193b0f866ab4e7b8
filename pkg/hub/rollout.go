package hub

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/render"
	"github.com/ferry-mc/ferry/pkg/rollout"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// AnnotationRevisionSince, on a ManifestWork, is when the hub wrote the revision it carries (its
// WorkRevision) into it: a rollout's progressDeadline counts from it.
const AnnotationRevisionSince = "ferry.io/revision-since"

// rolloutFacts are what a rollout reads of one cluster's work: taken with the work's verdict
// (workSummaries), as the work changes, not on every reconcile.
type rolloutFacts struct {
	revision  string // the hash of the revision it carries
	updatedAt time.Time
	// reported: the agent's report is about the work's current generation.
	reported     bool
	health       v1alpha2.Health
	healthySince time.Time
	why          string
}

// rolloutFactsOf reads mw's facts. A manifest the agent could not apply counts as Degraded: the
// revision failed there as surely as if it had been applied and broke.
func rolloutFactsOf(mw *workv1.ManifestWork) rolloutFacts {
	f := rolloutFacts{revision: v1alpha2.WorkRevision(mw.Annotations), updatedAt: mw.CreationTimestamp.Time, health: v1alpha2.HealthUnknown}
	if t, err := time.Parse(time.RFC3339, mw.Annotations[AnnotationRevisionSince]); err == nil {
		f.updatedAt = t
	}
	applied := workreport.WorkCondition(mw.Status.Conditions, workv1.WorkApplied, mw.Generation)
	if applied == nil {
		return f // no report on this generation yet: nothing of the earlier one counts
	}
	f.reported = true
	// Healthy since the last change of any condition that makes the verdict: never later than when it
	// turned Healthy, so that a soak is never cut short.
	since := applied.LastTransitionTime.Time
	var healthsBuf [8]v1alpha2.Health
	healths := healthsBuf[:0]
	var whyHealth v1alpha2.Health
	for _, m := range mw.Status.ResourceStatus.Manifests {
		r := workreport.ReadManifest(m.Conditions, mw.Generation)
		h, cond := r.Health, r.Unhealthy
		if r.Applied == metav1.ConditionFalse {
			h, cond = v1alpha2.Degraded, r.AppliedCondition
		}
		for _, c := range m.Conditions {
			// Drifted makes no verdict: an object put back on a canary does not restart its soak.
			if c.LastTransitionTime.After(since) && c.Type != workreport.ConditionDrifted {
				since = c.LastTransitionTime.Time
			}
		}
		healths = append(healths, h)
		if h != v1alpha2.Healthy && (f.why == "" || (h == v1alpha2.Degraded && whyHealth != v1alpha2.Degraded)) {
			rm := m.ResourceMeta
			f.why, whyHealth = fmt.Sprintf("%s %s is %s", rm.Kind, qualifiedName(rm.Namespace, rm.Name), h), h
			if cond != nil && cond.Message != "" {
				f.why += ": " + cond.Message
			}
		}
	}
	f.health = workreport.AggregateHealth(healths)
	if f.health == v1alpha2.Healthy {
		f.why, f.healthySince = "", since
	}
	return f
}

func qualifiedName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// deliveryPlan is what deliver writes: the same revision on every cluster (uniform), or a revision
// per cluster as a rollout decided.
type deliveryPlan struct {
	uniform *revisionBase
	// bases are the revisions deliver may write, by hash; revisionOf the hash each cluster's work is to
	// carry. A cluster whose revision is "" gets no work; one whose revision is not in bases keeps the
	// work it has.
	bases      map[string]*revisionBase
	revisionOf map[string]string
}

// baseFor is the revision cluster's work is to carry, nil when deliver writes nothing for it.
func (p deliveryPlan) baseFor(cluster string) *revisionBase {
	if p.uniform != nil {
		return p.uniform
	}
	return p.bases[p.revisionOf[cluster]]
}

// rolloutOutcome is what planning a rollout decided, for the status.
type rolloutOutcome struct {
	status  *v1alpha2.RolloutStatus
	recheck time.Duration
	// resumed: the AnnotationRolloutResume was taken, to be removed.
	resumed bool
}

// planRollout decides, with package rollout, which revision each of clusters carries while target
// rolls out under app's spec.rollout, from the API's state alone: the works (their revision, their
// report), the ManagedClusters, the AppConfig's status and annotations. It writes nothing.
func (r *AppConfigReconciler) planRollout(ctx context.Context, app *v1alpha2.ApplicationConfiguration, target *revisionBase,
	clusters []string, now time.Time) (deliveryPlan, rolloutOutcome, error) {
	facts := r.summaries.rolloutFacts(client.ObjectKeyFromObject(app))
	in := rollout.Input{Spec: *app.Spec.Rollout, Revision: target.hash(), Now: now}
	var err error
	if in.Clusters, err = r.rolloutClusters(ctx, app, clusters, facts); err != nil {
		return deliveryPlan{}, rolloutOutcome{}, err
	}
	plan := deliveryPlan{bases: map[string]*revisionBase{target.hash(): target}}
	prev := app.Status.Rollout
	stableName, err := r.stableRevision(ctx, app, facts, &in, &plan)
	if err != nil {
		return deliveryPlan{}, rolloutOutcome{}, err
	}
	out := rolloutOutcome{}
	if prev != nil && prev.Revision == target.Name {
		switch prev.Phase {
		case v1alpha2.RolloutHalted, v1alpha2.RolloutRollingBack, v1alpha2.RolloutRolledBack:
			in.Halted = true
			if app.Annotations[v1alpha2.AnnotationRolloutResume] == target.Name {
				in.Halted, out.resumed = false, true
			}
		}
	}
	if rev, stages, ok := strings.Cut(app.Annotations[v1alpha2.AnnotationRolloutApprovals], "="); ok && rev == target.Name {
		in.Approved = strings.Split(stages, ",")
	}
	d, err := rollout.Decide(in)
	if err != nil {
		return deliveryPlan{}, rolloutOutcome{}, &render.Error{Component: "spec.rollout", Reason: "InvalidRollout", Message: err.Error()}
	}
	plan.revisionOf = d.Revisions
	if d.Phase == v1alpha2.RolloutComplete {
		plan.uniform = target // every cluster carries it: deliver may skip its pass as without a rollout
	}
	out.status = rolloutStatus(app, target.Name, d, prev, now)
	if in.Stable != "" && plan.bases[in.Stable] == nil {
		out.status.Message = strings.TrimPrefix(out.status.Message+"; ", "; ") + fmt.Sprintf("the stable revision %s is no longer recorded: "+
			"clusters that need it are left as they are", stableName)
	}
	out.recheck = d.RecheckAfter
	return plan, out, nil
}

// rolloutClusters are the facts package rollout decides from for each of clusters: its labels, whether
// it is reachable, its decision groups (when a stage takes clusters by them), and what its work carries
// and reports.
func (r *AppConfigReconciler) rolloutClusters(ctx context.Context, app *v1alpha2.ApplicationConfiguration, clusters []string,
	facts map[string]rolloutFacts) ([]rollout.Cluster, error) {
	managed, err := r.clusters(ctx)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]*clusterv1.ManagedCluster, len(managed))
	for _, mc := range managed {
		byName[mc.Name] = mc
	}
	var groups map[string][]string
	if slices.ContainsFunc(app.Spec.Rollout.Stages, func(s v1alpha2.RolloutStage) bool { return len(s.DecisionGroups) > 0 }) {
		if groups, err = decisionGroups(ctx, r.Client, app); err != nil {
			return nil, err
		}
	}
	out := make([]rollout.Cluster, 0, len(clusters))
	for _, name := range clusters {
		c := rollout.Cluster{Name: name, Groups: groups[name]}
		if mc := byName[name]; mc != nil {
			c.Labels = mc.Labels
			c.Reachable = meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
		}
		if f, ok := facts[name]; ok {
			c.Revision, c.UpdatedAt, c.Reported, c.Health, c.HealthySince, c.Why = f.revision, f.updatedAt, f.reported, f.health, f.healthySince, f.why
		}
		out = append(out, c)
	}
	return out, nil
}

// stableRevision finds the rollout's stable revision — the one its status names, or for the first
// rollout of an application delivered before, what most of its clusters carry — sets it as in.Stable
// and, when it is recorded, adds it to the bases plan may deliver. It returns its name ("" for none).
func (r *AppConfigReconciler) stableRevision(ctx context.Context, app *v1alpha2.ApplicationConfiguration, facts map[string]rolloutFacts,
	in *rollout.Input, plan *deliveryPlan) (string, error) {
	stableName := ""
	if prev := app.Status.Rollout; prev != nil {
		stableName = prev.StableRevision
	} else if hash := mostCarried(facts); hash != "" {
		stableName = AppRevisionName(app, hash)
		in.Stable = hash
	}
	if stableName == "" {
		return "", nil
	}
	stable, err := r.loadAppRevision(ctx, app, stableName)
	if err != nil {
		return "", err
	}
	if stable != nil {
		in.Stable = stable.hash()
		plan.bases[stable.hash()] = stable
	} else if in.Stable == "" {
		// Deleted by hand: the clusters that carry it still say which it is.
		for _, f := range facts {
			if AppRevisionName(app, f.revision) == stableName {
				in.Stable = f.revision
			}
		}
	}
	return stableName, nil
}

// mostCarried is the revision most works carry, "" when there are none.
func mostCarried(facts map[string]rolloutFacts) string {
	counts := map[string]int{}
	best := ""
	for _, f := range facts {
		counts[f.revision]++
		if c := counts[f.revision]; c > counts[best] || (c == counts[best] && f.revision < best) {
			best = f.revision
		}
	}
	return best
}

// rolloutStatus is the status of the decision d on app's revision rev, keeping the times of prev.
func rolloutStatus(app *v1alpha2.ApplicationConfiguration, rev string, d rollout.Decision, prev *v1alpha2.RolloutStatus, now time.Time) *v1alpha2.RolloutStatus {
	s := &v1alpha2.RolloutStatus{Revision: rev, Phase: d.Phase, Stage: d.Stage}
	if d.Stable != "" {
		s.StableRevision = AppRevisionName(app, d.Stable)
	}
	earlier := map[string]v1alpha2.RolloutStageStatus{}
	if prev != nil && prev.Revision == rev {
		for _, st := range prev.Stages {
			earlier[st.Name] = st
		}
	}
	stamp := metav1.NewTime(now.Truncate(time.Second))
	for _, st := range d.Stages {
		out := v1alpha2.RolloutStageStatus{Name: st.Name, Clusters: int32(st.Clusters), Updated: int32(st.Updated),
			Succeeded: int32(st.Succeeded), Failed: int32(st.Failed)}
		was := earlier[st.Name]
		out.StartedAt, out.CompletedAt = was.StartedAt, was.CompletedAt
		if out.StartedAt == nil && st.Updated > 0 {
			out.StartedAt = &stamp
		}
		if done := st.Clusters > 0 && st.Succeeded+st.Failed == st.Clusters; !done {
			out.CompletedAt = nil
		} else if out.CompletedAt == nil {
			out.CompletedAt = &stamp
		}
		s.Stages = append(s.Stages, out)
	}
	for i, f := range d.Failures {
		if i == v1alpha2.MaxClustersListed {
			s.OmittedFailures = int32(len(d.Failures) - i)
			break
		}
		s.Failures = append(s.Failures, v1alpha2.RolloutFailure{Cluster: f.Cluster, Stage: f.Stage, Reason: f.Reason,
			Message: cutMessage(f.Message, v1alpha2.MaxMessageLength, "…")})
	}
	if prev != nil && prev.Revision == rev && len(s.Failures) == 0 && s.OmittedFailures == 0 {
		switch d.Phase {
		case v1alpha2.RolloutHalted, v1alpha2.RolloutRollingBack, v1alpha2.RolloutRolledBack:
			// Clusters rolled back no longer carry the revision, so they no longer fail at it: the
			// failures that halted it stay on record, to say why.
			s.Failures, s.OmittedFailures = prev.Failures, prev.OmittedFailures
		}
	}
	s.Message = rolloutMessage(app, d, len(s.Failures)+int(s.OmittedFailures))
	return s
}

// rolloutMessage says what the rollout waits for, or what to do; failed counts the failed clusters.
func rolloutMessage(app *v1alpha2.ApplicationConfiguration, d rollout.Decision, failed int) string {
	switch d.Phase {
	case v1alpha2.RolloutProgressing:
		for _, st := range d.Stages {
			if st.Name == d.Stage {
				return fmt.Sprintf("stage %s: %d of %d clusters updated, %d succeeded", st.Name, st.Updated, st.Clusters, st.Succeeded)
			}
		}
	case v1alpha2.RolloutPaused:
		return fmt.Sprintf("paused at stage %s by spec.rollout.paused: kubectl ferry rollout resume %s -n %s", d.Stage, app.Name, app.Namespace)
	case v1alpha2.RolloutWaitingForApproval:
		return fmt.Sprintf("stage %s requires approval: kubectl ferry rollout approve %s -n %s", d.Stage, app.Name, app.Namespace)
	case v1alpha2.RolloutHalted:
		return fmt.Sprintf("halted: %d clusters failed, more than maxFailures allows; the clusters keep what they have. "+
			"Fix the application (a new revision rolls out afresh) or resume: kubectl ferry rollout resume %s -n %s", failed, app.Name, app.Namespace)
	case v1alpha2.RolloutRollingBack:
		return fmt.Sprintf("halted: %d clusters failed, more than maxFailures allows; returning every cluster to the stable revision", failed)
	case v1alpha2.RolloutRolledBack:
		return fmt.Sprintf("rolled back: %d clusters failed, more than maxFailures allows; every cluster is back on the stable revision", failed)
	case v1alpha2.RolloutComplete:
		return "every cluster succeeded at the revision"
	}
	return ""
}

// setRolloutConditions sets the RolloutComplete and RolloutHalted conditions of status for its rollout,
// and records an event when the phase changed from before.
func (r *AppConfigReconciler) setRolloutConditions(app *v1alpha2.ApplicationConfiguration, status *v1alpha2.ApplicationConfigurationStatus, before *v1alpha2.RolloutStatus) {
	ro := status.Rollout
	if ro == nil {
		meta.RemoveStatusCondition(&status.Conditions, v1alpha2.ConditionRolloutComplete)
		meta.RemoveStatusCondition(&status.Conditions, v1alpha2.ConditionRolloutHalted)
		return
	}
	complete := metav1.Condition{Type: v1alpha2.ConditionRolloutComplete, Status: metav1.ConditionFalse, Reason: string(ro.Phase),
		Message: ro.Message, ObservedGeneration: app.Generation}
	halted := metav1.Condition{Type: v1alpha2.ConditionRolloutHalted, Status: metav1.ConditionFalse, Reason: "NotHalted",
		Message: "no more clusters failed than maxFailures allows", ObservedGeneration: app.Generation}
	switch ro.Phase {
	case v1alpha2.RolloutComplete:
		complete.Status = metav1.ConditionTrue
	case v1alpha2.RolloutHalted, v1alpha2.RolloutRollingBack, v1alpha2.RolloutRolledBack:
		halted.Status, halted.Reason, halted.Message = metav1.ConditionTrue, string(ro.Phase), ro.Message
	}
	complete.Message, halted.Message = capConditionMessage(complete.Message), capConditionMessage(halted.Message)
	meta.SetStatusCondition(&status.Conditions, complete)
	meta.SetStatusCondition(&status.Conditions, halted)
	if before != nil && before.Revision == ro.Revision && before.Phase == ro.Phase && before.Stage == ro.Stage {
		return
	}
	typ := corev1.EventTypeNormal
	if halted.Status == metav1.ConditionTrue {
		typ = corev1.EventTypeWarning
	}
	note := fmt.Sprintf("revision %s: %s", ro.Revision, ro.Phase)
	if ro.Stage != "" {
		note += ", stage " + ro.Stage
	}
	if ro.Message != "" {
		note += ": " + ro.Message
	}
	r.Recorder.Eventf(app, nil, typ, "Rollout"+string(ro.Phase), "Rollout", "%s", eventNote(note))
}

// undoneRevision is the recorded revision `kubectl ferry rollout undo` asked for (AnnotationRolloutUndo)
// while the AppConfig's generation is the one it was asked at, nil otherwise; a *render.Error when it
// names a revision that is not recorded.
func (r *AppConfigReconciler) undoneRevision(ctx context.Context, app *v1alpha2.ApplicationConfiguration) (*revisionBase, error) {
	name, gen, ok := strings.Cut(app.Annotations[v1alpha2.AnnotationRolloutUndo], "@")
	if !ok || gen != strconv.FormatInt(app.Generation, 10) {
		return nil, nil // none, or the spec was edited since: what it renders wins
	}
	base, err := r.loadAppRevision(ctx, app, name)
	if err != nil {
		return nil, err
	}
	if base == nil {
		return nil, &render.Error{Component: "spec.rollout", Reason: "RevisionNotFound", Message: fmt.Sprintf(
			"annotation %s names revision %s, which is not recorded: remove the annotation, or name a revision of kubectl get controllerrevisions -l %s=%s",
			v1alpha2.AnnotationRolloutUndo, name, LabelAppConfigName, app.Name)}
	}
	return base, nil
}

// rolloutMoved reports whether a rollout's status after a decision differs from before in what later
// decisions read: its revision, its stable revision, its phase or its stage.
func rolloutMoved(before, after *v1alpha2.RolloutStatus) bool {
	if after == nil {
		return false
	}
	return before == nil || before.Revision != after.Revision || before.StableRevision != after.StableRevision ||
		before.Phase != after.Phase || before.Stage != after.Stage
}

// recordRollout writes the rollout's status ro, and its conditions, into app's status.
func (r *AppConfigReconciler) recordRollout(ctx context.Context, app *v1alpha2.ApplicationConfiguration, ro *v1alpha2.RolloutStatus) error {
	status := app.Status.DeepCopy()
	status.Rollout = ro
	r.setRolloutConditions(app, status, app.Status.Rollout)
	patch := client.MergeFrom(app.DeepCopy())
	app.Status = *status
	if err := r.Client.Status().Patch(ctx, app, patch); err != nil {
		return fmt.Errorf("record the rollout's decision: %w", err)
	}
	return nil
}
