package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/internal/statusview"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
)

// rolloutHub is a hub API server for the rollout commands. Its AppConfigs' statuses are written by the
// tests, as the hub controllers would write them: the commands read the status and write the spec and
// the annotations the hub reads, nothing more.
type rolloutHub struct {
	t          *testing.T
	client     client.Client
	kubeconfig string
}

// app is the stored AppConfig name in default.
func (h *rolloutHub) app(name string) *v1alpha2.ApplicationConfiguration {
	h.t.Helper()
	app := &v1alpha2.ApplicationConfiguration{}
	if err := h.client.Get(h.t.Context(), client.ObjectKey{Namespace: "default", Name: name}, app); err != nil {
		h.t.Fatal(err)
	}
	return app
}

// create stores an AppConfig name in default with ro as its spec.rollout.
func (h *rolloutHub) create(name string, ro *v1alpha2.Rollout) {
	h.t.Helper()
	app := &v1alpha2.ApplicationConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1alpha2.ApplicationConfigurationSpec{Placement: &v1alpha2.Placement{Clusters: []string{"cluster1", "cluster2"}},
			Components: []v1alpha2.ApplicationConfigurationComponent{{ComponentName: "web"}}, Rollout: ro}}
	if err := h.client.Create(h.t.Context(), app); err != nil {
		h.t.Fatal(err)
	}
}

// report writes s as the status.rollout of AppConfig name, about its generation observed (0: its current
// one), as the hub reports it.
func (h *rolloutHub) report(name string, observed int64, s *v1alpha2.RolloutStatus) {
	h.t.Helper()
	app := h.app(name)
	app.Status.ObservedGeneration = app.Generation
	if observed != 0 {
		app.Status.ObservedGeneration = observed
	}
	app.Status.Rollout = s
	if err := h.client.Status().Update(h.t.Context(), app); err != nil {
		h.t.Fatal(err)
	}
}

// taken removes the resume and undo annotations of AppConfig name, as if the hub had taken them: the
// hub removes a resume once it lifted the halt, and an undo is taken once status.rollout.revision names
// its revision (here, the statuses written later do not).
func (h *rolloutHub) taken(name string) {
	h.t.Helper()
	app := h.app(name)
	patch := client.MergeFrom(app.DeepCopy())
	delete(app.Annotations, v1alpha2.AnnotationRolloutResume)
	delete(app.Annotations, v1alpha2.AnnotationRolloutUndo)
	if err := h.client.Patch(h.t.Context(), app, patch); err != nil {
		h.t.Fatal(err)
	}
}

// run runs `kubectl ferry args...` to its end, returning what it printed.
func (h *rolloutHub) run(args ...string) (string, error) {
	var out syncBuffer
	err := kubectlFerry(h.t.Context(), h.kubeconfig, &out, args...)
	return out.String(), err
}

// mustRun is run, failing the test on an error.
func (h *rolloutHub) mustRun(args ...string) string {
	h.t.Helper()
	out, err := h.run(args...)
	if err != nil {
		h.t.Fatalf("kubectl ferry %s: %v; it printed:\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// mustFail is run, failing the test unless it fails with an error saying every one of want.
func (h *rolloutHub) mustFail(args []string, want ...string) {
	h.t.Helper()
	out, err := h.run(args...)
	if err == nil {
		h.t.Fatalf("kubectl ferry %s succeeded, want an error saying %q; it printed:\n%s", strings.Join(args, " "), want, out)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			h.t.Errorf("kubectl ferry %s: error %q does not say %q", strings.Join(args, " "), err, w)
		}
	}
}

// watching is a `kubectl ferry rollout status --watch` running in the background.
type watching struct {
	out  *syncBuffer
	done chan error
}

func (h *rolloutHub) watch(args ...string) *watching {
	ctx, cancel := context.WithCancel(h.t.Context())
	h.t.Cleanup(cancel) // when a step fails before it ends
	w := &watching{out: &syncBuffer{}, done: make(chan error, 1)}
	go func() { w.done <- kubectlFerry(ctx, h.kubeconfig, w.out, args...) }()
	return w
}

// printed waits until the watch printed a view that says want.
func (w *watching) printed(t *testing.T, want string) {
	t.Helper()
	poll(t, "a view saying "+want+" printed", func(context.Context) (bool, error) {
		return strings.Contains(w.out.String(), want), nil
	})
}

// ended is how the watch ended, failing t when it runs on for a minute.
func (w *watching) ended(t *testing.T) error {
	t.Helper()
	select {
	case err := <-w.done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("the watch did not end within a minute; it printed:\n%s", w.out.String())
		return nil
	}
}

// running fails t when the watch has ended.
func (w *watching) running(t *testing.T) {
	t.Helper()
	select {
	case err := <-w.done:
		t.Fatalf("the watch ended (%v) while the rollout was not over; it printed:\n%s", err, w.out.String())
	default:
	}
}

// The rollout commands against a real hub API server: what they write into the AppConfig (its
// spec.rollout.paused and the annotations the hub reads), what they refuse, and what they print of a
// status.rollout as the hub reports it.
func TestKubectlFerryRollout(t *testing.T) {
	env := localcluster.StartForTest(t, localcluster.Options{})
	hubClient, err := client.New(env.Hub.Config, client.Options{Scheme: mustScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	h := &rolloutHub{t: t, client: hubClient, kubeconfig: env.Hub.Kubeconfig}
	stages := &v1alpha2.Rollout{Stages: []v1alpha2.RolloutStage{{Name: "canary", Clusters: []string{"cluster1"}},
		{Name: "prod", RequireApproval: true}}}
	h.create("web", stages)
	h.create("plain", nil)
	halted := &v1alpha2.RolloutStatus{Revision: "web-c3", StableRevision: "web-b2", Phase: v1alpha2.RolloutHalted,
		Message: "halted: 4 clusters failed, more than maxFailures allows",
		Stages: []v1alpha2.RolloutStageStatus{
			{Name: "canary", Clusters: 1, Updated: 1, Succeeded: 0, Failed: 1, StartedAt: &metav1.Time{Time: time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC)}},
			{Name: "prod", Clusters: 5, Updated: 0},
		},
		Failures: []v1alpha2.RolloutFailure{
			{Cluster: "cluster1", Stage: "canary", Reason: "Degraded", Message: "Deployment default/web is Degraded"},
			{Cluster: "cluster7", Stage: "canary", Reason: "ClusterUnreachable"},
		},
		OmittedFailures: 2,
	}
	progressing := &v1alpha2.RolloutStatus{Revision: "web-c3", StableRevision: "web-b2", Phase: v1alpha2.RolloutProgressing, Stage: "canary",
		Message: "stage canary: 0 of 1 clusters updated, 0 succeeded"}
	waiting := &v1alpha2.RolloutStatus{Revision: "web-c3", StableRevision: "web-b2", Phase: v1alpha2.RolloutWaitingForApproval, Stage: "prod",
		Message: "stage prod requires approval: kubectl ferry rollout approve web -n default"}
	complete := &v1alpha2.RolloutStatus{Revision: "web-c3", StableRevision: "web-c3", Phase: v1alpha2.RolloutComplete,
		Message: "every cluster succeeded at the revision"}

	t.Run("status prints the revisions, the phase, each stage's counts and the failed clusters", func(t *testing.T) {
		h.report("web", 0, halted)
		out := h.mustRun("rollout", "status", "web", "-n", "default")
		checkRows(t, out, lastTable(t, out, "APPCONFIG"), strings.Fields("default/web web-c3 web-b2 Halted - halted: 4 clusters failed, more than maxFailures allows"))
		checkRows(t, out, lastTable(t, out, "STAGE"),
			[]string{"canary", "1", "1", "0", "1", "2025-05-01T10:00:00Z", "-"},
			[]string{"prod", "5", "0", "0", "0", "-", "-"})
		checkRows(t, out, lastTable(t, out, "CLUSTER"),
			strings.Fields("cluster1 canary Degraded Deployment default/web is Degraded"),
			[]string{"cluster7", "canary", "ClusterUnreachable", "-"},
			[]string{"and", "2", "more"})

		out = h.mustRun("rollout", "status", "web", "-n", "default", "-o", "json")
		docs := decodeJSONStream[statusview.Rollout](out)
		if len(docs) != 1 {
			t.Fatalf("%d JSON documents, want 1:\n%s", len(docs), out)
		}
		if r := docs[0]; !r.Enabled || !r.Observed || r.Revision != "web-c3" || r.Phase != v1alpha2.RolloutHalted ||
			len(r.Stages) != 2 || len(r.Failures) != 2 || r.OmittedFailures != 2 {
			t.Errorf("-o json: %+v, want revision web-c3 Halted, observed, two stages, two failures and two more", r)
		}
	})

	t.Run("an AppConfig without spec.rollout: status says so and succeeds, the changes refuse", func(t *testing.T) {
		want := "AppConfig default/plain has no spec.rollout: a new revision reaches every cluster at once"
		if out := h.mustRun("rollout", "status", "plain", "-n", "default"); strings.TrimSpace(out) != want {
			t.Errorf("printed %q, want %q", out, want)
		}
		// Nothing to wait for: --watch ends at once, well before its timeout.
		if out := h.mustRun("rollout", "status", "plain", "-n", "default", "--watch", "--timeout", "30s"); !strings.Contains(out, want) {
			t.Errorf("--watch printed %q, want %q", out, want)
		}
		for _, verb := range []string{"pause", "resume", "approve"} {
			h.mustFail([]string{"rollout", verb, "plain", "-n", "default"}, "AppConfig default/plain has no spec.rollout")
		}
		if app := h.app("plain"); app.Spec.Rollout != nil || len(app.Annotations) != 0 {
			t.Errorf("the refused commands changed the AppConfig: spec.rollout %+v, annotations %v", app.Spec.Rollout, app.Annotations)
		}
	})

	t.Run("pause sets spec.rollout.paused, resume takes it away", func(t *testing.T) {
		h.report("web", 0, progressing)
		gen := h.app("web").Generation
		if out := h.mustRun("rollout", "pause", "web", "-n", "default"); !strings.Contains(out, "paused the rollout of AppConfig default/web") {
			t.Errorf("pause printed %q", out)
		}
		app := h.app("web")
		if !app.Spec.Rollout.Paused || app.Generation != gen+1 || len(app.Spec.Rollout.Stages) != 2 {
			t.Fatalf("after pause: spec.rollout %+v at generation %d, want paused with its two stages at generation %d", app.Spec.Rollout, app.Generation, gen+1)
		}
		if out := h.mustRun("rollout", "pause", "web", "-n", "default"); !strings.Contains(out, "already paused") || h.app("web").Generation != gen+1 {
			t.Errorf("pause of a paused rollout printed %q and wrote generation %d, want it to say so and write nothing", out, h.app("web").Generation)
		}
		if out := h.mustRun("rollout", "resume", "web", "-n", "default"); !strings.Contains(out, "resumed the rollout of AppConfig default/web") {
			t.Errorf("resume printed %q", out)
		}
		app = h.app("web")
		if app.Spec.Rollout.Paused || len(app.Spec.Rollout.Stages) != 2 {
			t.Errorf("after resume: spec.rollout %+v, want not paused, with its two stages", app.Spec.Rollout)
		}
		if _, ok := app.Annotations[v1alpha2.AnnotationRolloutResume]; ok {
			t.Errorf("resume of a rollout that is not halted set %s", v1alpha2.AnnotationRolloutResume)
		}
		if out := h.mustRun("rollout", "resume", "web", "-n", "default"); !strings.Contains(out, "neither paused nor halted") {
			t.Errorf("resume of a rollout that is neither paused nor halted printed %q", out)
		}
	})

	t.Run("resume of a halted rollout lifts the halt of its revision", func(t *testing.T) {
		h.report("web", 0, halted)
		if out := h.mustRun("rollout", "resume", "web", "-n", "default"); !strings.Contains(out, "lifted the halt (Halted) of revision web-c3") {
			t.Errorf("resume printed %q", out)
		}
		if got := h.app("web").Annotations[v1alpha2.AnnotationRolloutResume]; got != "web-c3" {
			t.Errorf("annotation %s is %q, want the revision rolling out, web-c3", v1alpha2.AnnotationRolloutResume, got)
		}
	})

	t.Run("approve approves the stage waiting, keeping the approvals of the same revision", func(t *testing.T) {
		h.report("web", 0, progressing)
		h.mustFail([]string{"rollout", "approve", "web", "-n", "default"}, "nothing waits for approval", "web-c3")

		h.report("web", 0, waiting)
		if out := h.mustRun("rollout", "approve", "web", "-n", "default"); !strings.Contains(out, "approved stage prod of revision web-c3") {
			t.Errorf("approve printed %q", out)
		}
		approvals := func() string { return h.app("web").Annotations[v1alpha2.AnnotationRolloutApprovals] }
		if got := approvals(); got != "web-c3=prod" {
			t.Fatalf("approvals %q, want web-c3=prod", got)
		}
		h.mustRun("rollout", "approve", "web", "-n", "default", "--stage", "canary")
		if got := approvals(); got != "web-c3=prod,canary" {
			t.Errorf("approvals %q after approving canary too, want web-c3=prod,canary", got)
		}
		h.mustFail([]string{"rollout", "approve", "web", "-n", "default", "--stage", "staging"}, `no stage "staging"`, "canary, prod")

		// A new revision: the approvals of the one before approve nothing of it.
		next := waiting.DeepCopy()
		next.Revision, next.Stage = "web-d4", "canary"
		h.report("web", 0, next)
		h.mustRun("rollout", "approve", "web", "-n", "default")
		if got := approvals(); got != "web-d4=canary" {
			t.Errorf("approvals %q, want web-d4=canary only", got)
		}
	})

	// The revisions of web, and one of another application, as the hub records them.
	created := map[string]string{}
	for i, name := range []string{"web-a1", "web-b2", "web-c3"} {
		rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Labels: map[string]string{hub.LabelAppConfigNamespace: "default", hub.LabelAppConfigName: "web"}},
			Data: runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}, Revision: int64(i + 1)}
		if err := hubClient.Create(t.Context(), rev); err != nil {
			t.Fatal(err)
		}
		created[name] = rev.CreationTimestamp.UTC().Format(time.RFC3339)
	}
	other := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "webshop-e5", Namespace: "default",
		Labels: map[string]string{hub.LabelAppConfigNamespace: "default", hub.LabelAppConfigName: "webshop"}},
		Data: runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}, Revision: 4}
	if err := hubClient.Create(t.Context(), other); err != nil {
		t.Fatal(err)
	}

	t.Run("history lists the recorded revisions, marking the one rolling out and the stable one", func(t *testing.T) {
		h.report("web", 0, halted)
		out := h.mustRun("rollout", "history", "web", "-n", "default")
		rows := lastTable(t, out, "REVISION")
		if len(rows) != 3 {
			t.Errorf("%d revisions, want web's three:\n%s", len(rows), out)
		}
		checkRows(t, out, rows,
			[]string{"1", "web-a1", created["web-a1"], "-"},
			[]string{"2", "web-b2", created["web-b2"], "stable"},
			[]string{"3", "web-c3", created["web-c3"], "rolling-out"})
	})

	t.Run("undo rolls back to the stable revision, or the one named, at the current generation", func(t *testing.T) {
		undo := func() string { return h.app("web").Annotations[v1alpha2.AnnotationRolloutUndo] }
		gen := strconv.FormatInt(h.app("web").Generation, 10)
		if out := h.mustRun("rollout", "undo", "web", "-n", "default"); !strings.Contains(out, "back to revision 2 (web-b2)") {
			t.Errorf("undo printed %q", out)
		}
		if got := undo(); got != "web-b2@"+gen {
			t.Errorf("undo annotation %q, want the stable revision at the current generation, web-b2@%s", got, gen)
		}
		h.mustRun("rollout", "undo", "web", "-n", "default", "--to-revision", "1")
		if got := undo(); got != "web-a1@"+gen {
			t.Errorf("undo annotation %q after --to-revision 1, want web-a1@%s", got, gen)
		}
		h.mustFail([]string{"rollout", "undo", "web", "-n", "default", "--to-revision", "4"},
			"AppConfig default/web has no revision 4; its recorded revisions: 1, 2, 3")
		if got := undo(); got != "web-a1@"+gen {
			t.Errorf("a refused undo changed the annotation to %q", got)
		}
	})

	t.Run("undo of a complete rollout goes back to the revision before it", func(t *testing.T) {
		h.report("web", 0, complete)
		gen := strconv.FormatInt(h.app("web").Generation, 10)
		h.mustRun("rollout", "undo", "web", "-n", "default")
		if got := h.app("web").Annotations[v1alpha2.AnnotationRolloutUndo]; got != "web-b2@"+gen {
			t.Errorf("undo annotation %q, want the revision before web-c3, web-b2@%s", got, gen)
		}
		first := complete.DeepCopy()
		first.Revision, first.StableRevision = "web-a1", "web-a1"
		h.report("web", 0, first)
		h.mustFail([]string{"rollout", "undo", "web", "-n", "default"}, "no revision before revision 1")
	})

	t.Run("status --watch waits while the hub has not taken an undo", func(t *testing.T) {
		h.report("web", 0, complete)
		h.mustRun("rollout", "undo", "web", "-n", "default")
		h.mustFail([]string{"rollout", "status", "web", "-n", "default", "--watch", "--timeout", "1s"},
			"the rollout of AppConfig default/web is not complete after 1s", "the hub has not taken the undo to revision web-b2 yet")
		h.taken("web")
	})

	t.Run("status --watch exits 0 once the rollout is Complete for the current generation", func(t *testing.T) {
		h.report("web", 0, progressing)
		w := h.watch("rollout", "status", "web", "-n", "default", "--watch", "--timeout", "2m")
		w.printed(t, "stage canary: 0 of 1 clusters updated")
		// Complete, but about the generation before: the hub has not looked at the last edit yet.
		gen := h.app("web").Generation
		h.report("web", gen-1, complete)
		w.printed(t, "the hub has not looked at generation "+strconv.FormatInt(gen, 10))
		// Printed again after that view, so the watch went on past it.
		soon := progressing.DeepCopy()
		soon.Message = "stage canary: 1 of 1 clusters updated, 0 succeeded"
		h.report("web", 0, soon)
		w.printed(t, soon.Message)
		w.running(t)

		h.report("web", 0, complete)
		if err := w.ended(t); err != nil {
			t.Fatalf("--watch ended with %v once the rollout was complete, want success; it printed:\n%s", err, w.out.String())
		}
		out := w.out.String()
		checkRows(t, out, lastTable(t, out, "APPCONFIG"), strings.Fields("default/web web-c3 web-c3 Complete - every cluster succeeded at the revision"))
	})

	t.Run("status --watch fails once the rollout halts, naming the revision and the failed clusters", func(t *testing.T) {
		h.report("web", 0, progressing)
		w := h.watch("rollout", "status", "web", "-n", "default", "-w", "--timeout", "2m")
		w.printed(t, "Progressing")
		h.report("web", 0, halted)
		err := w.ended(t)
		if err == nil {
			t.Fatalf("--watch succeeded on a halted rollout; it printed:\n%s", w.out.String())
		}
		for _, want := range []string{"rollout of revision web-c3 halted", "4 clusters failed", "cluster1 (stage canary): Degraded", "cluster7", "and 2 more"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	})

	t.Run("status --watch fails at --timeout saying what the rollout waits for", func(t *testing.T) {
		h.report("web", 0, waiting)
		began := time.Now()
		h.mustFail([]string{"rollout", "status", "web", "-n", "default", "--watch", "--timeout", "2s"},
			"the rollout of AppConfig default/web is not complete after 2s", "phase WaitingForApproval at stage prod")
		if waited := time.Since(began); waited < 2*time.Second {
			t.Errorf("gave up after %s, before its timeout", waited)
		}
	})
}
