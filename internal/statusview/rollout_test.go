package statusview

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

var rolloutStart = metav1.NewTime(time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC))

func at(minutes int) *metav1.Time {
	t := metav1.NewTime(rolloutStart.Add(time.Duration(minutes) * time.Minute))
	return &t
}

// rollingApp is an AppConfig at generation 3 with spec.rollout, whose status (about generation
// observed) says status.
func rollingApp(observed int64, status *v1alpha2.RolloutStatus) *v1alpha2.ApplicationConfiguration {
	return &v1alpha2.ApplicationConfiguration{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello-app", Generation: 3},
		Spec: v1alpha2.ApplicationConfigurationSpec{Rollout: &v1alpha2.Rollout{
			Stages: []v1alpha2.RolloutStage{{Name: "canary"}, {Name: "prod", RequireApproval: true}}}},
		Status: v1alpha2.ApplicationConfigurationStatus{ObservedGeneration: observed, Rollout: status},
	}
}

// haltedAtProd is a rollout that halted in stage prod with three clusters failed, one of them not listed.
func haltedAtProd() *v1alpha2.RolloutStatus {
	return &v1alpha2.RolloutStatus{Revision: "hello-app-b2", StableRevision: "hello-app-a1", Phase: v1alpha2.RolloutHalted,
		Message: "halted: 3 clusters failed, more than maxFailures allows",
		Stages: []v1alpha2.RolloutStageStatus{
			{Name: "canary", Clusters: 1, Updated: 1, Succeeded: 1, StartedAt: at(0), CompletedAt: at(3)},
			{Name: "prod", Clusters: 4, Updated: 3, Succeeded: 0, Failed: 3, StartedAt: at(5)},
		},
		Failures: []v1alpha2.RolloutFailure{
			{Cluster: "cluster2", Stage: "prod", Reason: "Degraded", Message: "Deployment default/web is Degraded: Deployment exceeded its progress deadline"},
			{Cluster: "cluster3", Stage: "prod", Reason: "ProgressDeadlineExceeded"},
		},
		OmittedFailures: 1,
	}
}

func TestRolloutTable(t *testing.T) {
	t.Run("stages with their counts and times, the failed clusters, and how many more", func(t *testing.T) {
		checkText(t, write(t, FormatTable, ForRollout(rollingApp(3, haltedAtProd()))), `APPCONFIG           REVISION       STABLE         PHASE    STAGE   MESSAGE
default/hello-app   hello-app-b2   hello-app-a1   Halted   -       halted: 3 clusters failed, more than maxFailures allows

STAGE    CLUSTERS   UPDATED   SUCCEEDED   FAILED   STARTED                COMPLETED
canary   1          1         1           0        2025-05-01T10:00:00Z   2025-05-01T10:03:00Z
prod     4          3         0           3        2025-05-01T10:05:00Z   -

CLUSTER    STAGE   REASON                     MESSAGE
cluster2   prod    Degraded                   Deployment default/web is Degraded: Deployment exceeded i...
cluster3   prod    ProgressDeadlineExceeded   -
and 1 more
`)
	})
	t.Run("the hub's message whole, after a note that it is about an earlier generation", func(t *testing.T) {
		waiting := &v1alpha2.RolloutStatus{Revision: "hello-app-b2", Phase: v1alpha2.RolloutWaitingForApproval, Stage: "prod",
			Message: "stage prod requires approval: kubectl ferry rollout approve hello-app -n default"}
		checkText(t, write(t, FormatTable, ForRollout(rollingApp(2, waiting))), `APPCONFIG           REVISION       STABLE   PHASE                STAGE   MESSAGE
default/hello-app   hello-app-b2   -        WaitingForApproval   prod    the hub has not looked at generation 3 of the AppConfig yet; stage prod requires approval: kubectl ferry rollout approve hello-app -n default
`)
	})
	t.Run("before the hub reported on it", func(t *testing.T) {
		checkText(t, write(t, FormatTable, ForRollout(rollingApp(0, nil))), `APPCONFIG           REVISION   STABLE   PHASE   STAGE   MESSAGE
default/hello-app   -          -        -       -       the hub has not looked at generation 3 of the AppConfig yet; the hub has not reported on the rollout yet
`)
	})
	t.Run("no spec.rollout: said plainly", func(t *testing.T) {
		app := rollingApp(3, nil)
		app.Spec.Rollout = nil
		checkText(t, write(t, FormatTable, ForRollout(app)),
			"AppConfig default/hello-app has no spec.rollout: a new revision reaches every cluster at once\n")
	})
}

func TestRolloutVerdict(t *testing.T) {
	complete := &v1alpha2.RolloutStatus{Revision: "hello-app-b2", StableRevision: "hello-app-b2", Phase: v1alpha2.RolloutComplete}
	progressing := &v1alpha2.RolloutStatus{Revision: "hello-app-b2", StableRevision: "hello-app-a1", Phase: v1alpha2.RolloutProgressing,
		Stage: "canary", Message: "stage canary: 0 of 1 clusters updated, 0 succeeded"}
	rolledBack := haltedAtProd()
	rolledBack.Phase = v1alpha2.RolloutRolledBack
	withAnnotation := func(app *v1alpha2.ApplicationConfiguration, k, v string) *v1alpha2.ApplicationConfiguration {
		app.Annotations = map[string]string{k: v}
		return app
	}
	noRollout := rollingApp(3, nil)
	noRollout.Spec.Rollout = nil
	for _, tc := range []struct {
		name        string
		app         *v1alpha2.ApplicationConfiguration
		wantDone    bool
		wantPending string   // in the pending lines
		wantErr     []string // in the error
	}{
		{name: "complete for the current generation: done", app: rollingApp(3, complete), wantDone: true},
		{name: "no spec.rollout: nothing to wait for", app: noRollout, wantDone: true},
		{name: "complete for an earlier generation: waits", app: rollingApp(2, complete), wantPending: "not looked at generation 3"},
		{name: "progressing: waits, saying where", app: rollingApp(3, progressing), wantPending: "phase Progressing at stage canary: stage canary: 0 of 1"},
		{name: "not reported yet: waits", app: rollingApp(3, nil), wantPending: "not reported on the rollout"},
		{name: "halted: fails naming the revision and the failed clusters", app: rollingApp(3, haltedAtProd()), wantErr: []string{
			"rollout of revision hello-app-b2 halted: 3 clusters failed", "cluster2 (stage prod): Degraded: Deployment default/web is Degraded",
			"cluster3 (stage prod): ProgressDeadlineExceeded", "and 1 more"}},
		{name: "rolled back: fails naming the stable revision", app: rollingApp(3, rolledBack), wantErr: []string{
			"rollout of revision hello-app-b2 halted and rolled back to revision hello-app-a1: 3 clusters failed"}},
		{name: "halted for an earlier generation: waits for the hub to look at the edit", app: rollingApp(2, haltedAtProd()), wantPending: "generation 3"},
		{name: "halted with a resume the hub has not taken: waits",
			app:         withAnnotation(rollingApp(3, haltedAtProd()), v1alpha2.AnnotationRolloutResume, "hello-app-b2"),
			wantPending: "the hub has not taken the resume of revision hello-app-b2 yet"},
		{name: "halted with an undo the hub has not taken: waits",
			app:         withAnnotation(rollingApp(3, haltedAtProd()), v1alpha2.AnnotationRolloutUndo, "hello-app-a1@3"),
			wantPending: "the hub has not taken the undo to revision hello-app-a1 yet"},
		{name: "halted with an undo of an earlier generation: fails", app: withAnnotation(rollingApp(3, haltedAtProd()), v1alpha2.AnnotationRolloutUndo, "hello-app-a1@2"),
			wantErr: []string{"rollout of revision hello-app-b2 halted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done, pending, err := ForRollout(tc.app).Verdict()
			if done != tc.wantDone {
				t.Errorf("done %v, want %v (pending %q, error %v)", done, tc.wantDone, pending, err)
			}
			if got := strings.Join(pending, "\n"); !strings.Contains(got, tc.wantPending) || (tc.wantPending == "") != (got == "") {
				t.Errorf("pending %q, want it to say %q", got, tc.wantPending)
			}
			if (err != nil) != (len(tc.wantErr) > 0) {
				t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

func TestRolloutHistoryTable(t *testing.T) {
	rev := func(n int64, name string, minutes int) appsv1.ControllerRevision {
		return appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: *at(minutes)}, Revision: n}
	}
	revs := []appsv1.ControllerRevision{rev(3, "hello-app-c3", 20), rev(1, "hello-app-a1", 0), rev(2, "hello-app-b2", 10)}
	t.Run("by number, marking the revision rolling out and the stable one", func(t *testing.T) {
		checkText(t, write(t, FormatTable, ForRolloutHistory(rollingApp(3, haltedAtProd()), revs)), `REVISION   NAME           CREATED                ROLLOUT
1          hello-app-a1   2025-05-01T10:00:00Z   stable
2          hello-app-b2   2025-05-01T10:10:00Z   rolling-out
3          hello-app-c3   2025-05-01T10:20:00Z   -
`)
	})
	t.Run("a complete rollout: its revision is the stable one", func(t *testing.T) {
		complete := &v1alpha2.RolloutStatus{Revision: "hello-app-c3", StableRevision: "hello-app-c3", Phase: v1alpha2.RolloutComplete}
		h := ForRolloutHistory(rollingApp(3, complete), revs)
		if last := h.Revisions[2]; !last.Stable || last.RollingOut {
			t.Errorf("revision 3 %+v, want stable and not rolling out", last)
		}
	})
	t.Run("none recorded", func(t *testing.T) {
		checkText(t, write(t, FormatTable, ForRolloutHistory(rollingApp(3, nil), nil)), "No revisions of AppConfig default/hello-app are recorded yet.\n")
	})
}
