package statusview

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// ForRollout is the view of app's rollout.
func ForRollout(app *v1alpha2.ApplicationConfiguration) Rollout {
	r := Rollout{Namespace: app.Namespace, Name: app.Name, Stages: []v1alpha2.RolloutStageStatus{}, Failures: []v1alpha2.RolloutFailure{}}
	if app.Spec.Rollout == nil {
		return r
	}
	r.Enabled, r.Paused = true, app.Spec.Rollout.Paused
	r.Generation, r.Observed = app.Generation, app.Status.ObservedGeneration == app.Generation
	s := app.Status.Rollout
	if s == nil {
		return r
	}
	r.Revision, r.StableRevision, r.Phase, r.Stage, r.Message = s.Revision, s.StableRevision, s.Phase, s.Stage, s.Message
	r.Stages = append(r.Stages, s.Stages...)
	r.Failures = append(r.Failures, s.Failures...)
	r.OmittedFailures = s.OmittedFailures
	// The hub takes a resume away once it lifted the halt, and rolls out an undo's revision while the
	// generation is the one it names: until then, the status is about before the request.
	if rev := app.Annotations[v1alpha2.AnnotationRolloutResume]; rev != "" && rev == s.Revision && halted(s.Phase) {
		r.Requests = append(r.Requests, "resume of revision "+rev)
	}
	if rev, gen, ok := strings.Cut(app.Annotations[v1alpha2.AnnotationRolloutUndo], "@"); ok && rev != s.Revision &&
		gen == strconv.FormatInt(app.Generation, 10) {
		r.Requests = append(r.Requests, "undo to revision "+rev)
	}
	return r
}

// halted says whether phase is one a rollout stays in until a person acts.
func halted(phase v1alpha2.RolloutPhase) bool {
	switch phase {
	case v1alpha2.RolloutHalted, v1alpha2.RolloutRollingBack, v1alpha2.RolloutRolledBack:
		return true
	}
	return false
}

// Verdict is where a wait for the rollout stands (`kubectl ferry rollout status --watch`): done once
// there is nothing more to wait for — the rollout is Complete for the AppConfig's current generation, or
// there is no spec.rollout; an error once the rollout of the current generation halted (Halted) or
// rolled back (RolledBack) with no request pending that would change that; else pending says what
// it waits for.
func (r Rollout) Verdict() (done bool, pending []string, err error) {
	switch {
	case !r.Enabled:
		return true, nil, nil
	case !r.Observed:
		return false, []string{fmt.Sprintf("the hub has not looked at generation %d of the AppConfig yet", r.Generation)}, nil
	case r.Revision == "":
		return false, []string{"the hub has not reported on the rollout yet"}, nil
	case len(r.Requests) > 0:
		return false, []string{"the hub has not taken the " + strings.Join(r.Requests, " and the ") + " yet"}, nil
	case r.Phase == v1alpha2.RolloutComplete:
		return true, nil, nil
	case r.Phase == v1alpha2.RolloutHalted:
		return false, nil, fmt.Errorf("rollout of revision %s halted: %s", r.Revision, r.failures())
	case r.Phase == v1alpha2.RolloutRolledBack:
		return false, nil, fmt.Errorf("rollout of revision %s halted and rolled back to revision %s: %s", r.Revision, r.StableRevision, r.failures())
	}
	why := "phase " + string(r.Phase)
	if r.Stage != "" {
		why += " at stage " + r.Stage
	}
	if r.Message != "" {
		why += ": " + r.Message
	}
	return false, []string{why}, nil
}

// failures says which clusters failed and why, one per line, for an error.
func (r Rollout) failures() string {
	if len(r.Failures) == 0 {
		return r.Message
	}
	lines := []string{fmt.Sprintf("%d clusters failed", len(r.Failures)+int(r.OmittedFailures))}
	for _, f := range r.Failures {
		lines = append(lines, fmt.Sprintf("%s (stage %s): %s", f.Cluster, f.Stage, reasonMessage(f.Reason, f.Message)))
	}
	if r.OmittedFailures > 0 {
		lines = append(lines, fmt.Sprintf("and %d more", r.OmittedFailures))
	}
	return strings.Join(lines, "\n  ")
}

// noRollout is what the table of an AppConfig without spec.rollout says.
func (r Rollout) noRollout() string {
	return fmt.Sprintf("AppConfig %s/%s has no spec.rollout: a new revision reaches every cluster at once", r.Namespace, r.Name)
}

// ForRolloutHistory is the view of app's recorded revisions revs, in any order.
func ForRolloutHistory(app *v1alpha2.ApplicationConfiguration, revs []appsv1.ControllerRevision) RolloutHistory {
	h := RolloutHistory{Namespace: app.Namespace, Name: app.Name, Revisions: []AppRevision{}}
	var s v1alpha2.RolloutStatus
	if app.Status.Rollout != nil {
		s = *app.Status.Rollout
	}
	for _, rev := range revs {
		h.Revisions = append(h.Revisions, AppRevision{Revision: rev.Revision, Name: rev.Name, Created: rev.CreationTimestamp,
			RollingOut: rev.Name == s.Revision && rev.Name != s.StableRevision, Stable: rev.Name == s.StableRevision})
	}
	slices.SortFunc(h.Revisions, func(x, y AppRevision) int {
		return cmp.Or(cmp.Compare(x.Revision, y.Revision), cmp.Compare(x.Name, y.Name))
	})
	return h
}
