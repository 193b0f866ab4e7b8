package hub_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
	"github.com/ferry-mc/ferry/pkg/render"
)

// A rollout on real API servers, hub and two spokes with their agents: a canary stage of cluster1, then
// the rest, which needs an approval. A revision reaches cluster2 only once cluster1 is healthy with it
// and the stage is approved; an approval of one revision does not approve the next; a revision that
// breaks the canary (Degraded) halts the rollout with cluster2 untouched, and onFailure Rollback then
// returns cluster1 to the stable revision.
func TestRolloutStagesARevisionAndHaltsOnADegradedCluster(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	app := f.appConfig("web", onClusters(clusters...), v1alpha2.ApplicationConfigurationComponent{ComponentName: "web"})
	app.Spec.Rollout = &v1alpha2.Rollout{
		Stages: []v1alpha2.RolloutStage{
			{Name: "canary", Clusters: []string{"cluster1"}},
			{Name: "rest", RequireApproval: true},
		},
		RolloutConfig: v1alpha2.RolloutConfig{MinSuccessTime: &metav1.Duration{Duration: 2 * time.Second}},
	}
	f.createApp(app)

	phase := func(p v1alpha2.RolloutPhase, stage string) func(*v1alpha2.ApplicationConfiguration) bool {
		return func(a *v1alpha2.ApplicationConfiguration) bool {
			ro := a.Status.Rollout
			return ro != nil && ro.Phase == p && ro.Stage == stage
		}
	}
	noWorkOn := func(cluster string) {
		t.Helper()
		_, err := f.work(context.Background(), cluster, "web")
		if !apierrors.IsNotFound(err) {
			t.Fatalf("ManifestWork on %s: %v, want none before its stage", cluster, err)
		}
	}
	carries := func(cluster, revision string) {
		t.Helper()
		got, err := f.carriedRevision(context.Background(), app, cluster)
		if err != nil {
			t.Fatal(err)
		}
		if got != revision {
			t.Fatalf("the work on %s carries revision %s, want %s", cluster, got, revision)
		}
	}
	approve := func(revision, stage string) {
		f.updateApp("web", func(a *v1alpha2.ApplicationConfiguration) {
			metav1.SetMetaDataAnnotation(&a.ObjectMeta, v1alpha2.AnnotationRolloutApprovals, revision+"="+stage)
		})
	}

	// The first revision: the canary gets it and soaks; the rest waits for its approval with no work.
	first := f.waitApp("web", "first revision waiting for approval of stage rest", phase(v1alpha2.RolloutWaitingForApproval, "rest"))
	rev1 := first.Status.Rollout.Revision
	if st := first.Status.Rollout.Stages; len(st) != 2 || st[0].Succeeded != 1 || st[1].Updated != 0 || st[0].StartedAt == nil || st[0].CompletedAt == nil {
		t.Fatalf("stages while waiting: %+v, want canary succeeded (with its times) and rest not started", st)
	}
	f.waitImage("cluster1", "web", "nginx:1")
	noWorkOn("cluster2")
	approve(rev1, "rest")
	done := f.waitApp("web", "first revision complete", phase(v1alpha2.RolloutComplete, ""))
	if done.Status.Rollout.StableRevision != rev1 || !meta.IsStatusConditionTrue(done.Status.Conditions, v1alpha2.ConditionRolloutComplete) {
		t.Fatalf("complete: stable %q, conditions %+v; want stable %s and RolloutComplete True", done.Status.Rollout.StableRevision, done.Status.Conditions, rev1)
	}
	f.waitImage("cluster2", "web", "nginx:1")

	// A new image: the canary first; the approval given to the first revision does not carry over.
	f.updateComponent("web", func(c *v1alpha2.Component) {
		c.Spec.Workload = deploymentWorkload("web", "nginx:2")
	})
	second := f.waitApp("web", "second revision waiting for approval", func(a *v1alpha2.ApplicationConfiguration) bool {
		return phase(v1alpha2.RolloutWaitingForApproval, "rest")(a) && a.Status.Rollout.Revision != rev1
	})
	rev2 := second.Status.Rollout.Revision
	if second.Status.Rollout.StableRevision != rev1 {
		t.Fatalf("stable revision while rev2 rolls out: %q, want %s", second.Status.Rollout.StableRevision, rev1)
	}
	f.waitImage("cluster1", "web", "nginx:2")
	carries("cluster2", rev1)
	f.waitImage("cluster2", "web", "nginx:1")
	approve(rev2, "rest")
	f.waitApp("web", "second revision complete", func(a *v1alpha2.ApplicationConfiguration) bool {
		return phase(v1alpha2.RolloutComplete, "")(a) && a.Status.Rollout.StableRevision == rev2
	})
	f.waitImage("cluster2", "web", "nginx:2")

	// A revision whose pods no node takes, with three seconds to make progress: Degraded on the canary,
	// and the rollout halts there.
	f.updateComponent("web", func(c *v1alpha2.Component) {
		raw := string(deploymentWorkload("web", "nginx:3").Raw)
		raw = strings.Replace(raw, `"spec":{"replicas":1,`, `"spec":{"replicas":1,"progressDeadlineSeconds":3,`, 1)
		raw = strings.Replace(raw, `"spec":{"containers"`, `"spec":{"nodeSelector":{"ferry.io/test-no-such-node":"true"},"containers"`, 1)
		c.Spec.Workload.Raw = []byte(raw)
	})
	halted := f.waitApp("web", "third revision halted on the canary", phase(v1alpha2.RolloutHalted, ""))
	ro := halted.Status.Rollout
	if ro.Revision == rev2 || ro.StableRevision != rev2 || len(ro.Failures) != 1 || ro.Failures[0].Cluster != "cluster1" ||
		ro.Failures[0].Reason != "Degraded" || !strings.Contains(ro.Failures[0].Message, "Deployment") {
		t.Fatalf("halted rollout: %+v, want cluster1 failed Degraded (naming the Deployment) and %s still stable", ro, rev2)
	}
	if c := meta.FindStatusCondition(halted.Status.Conditions, v1alpha2.ConditionRolloutHalted); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("RolloutHalted condition: %+v, want True", c)
	}
	carries("cluster2", rev2)
	f.waitImage("cluster2", "web", "nginx:2")

	// Rollback: the canary returns to the stable revision, exactly as it was delivered.
	f.updateApp("web", func(a *v1alpha2.ApplicationConfiguration) {
		a.Spec.Rollout.OnFailure = v1alpha2.RolloutFailureRollback
	})
	back := f.waitApp("web", "rolled back", phase(v1alpha2.RolloutRolledBack, ""))
	if back.Status.Rollout.Revision != ro.Revision {
		t.Fatalf("setting onFailure made revision %s of %s: an edit that changes nothing delivered is no new revision", back.Status.Rollout.Revision, ro.Revision)
	}
	if f := back.Status.Rollout.Failures; len(f) != 1 || f[0].Cluster != "cluster1" || f[0].Reason != "Degraded" {
		t.Fatalf("failures once rolled back: %+v, want still cluster1 Degraded, the reason of the halt", f)
	}
	carries("cluster1", rev2)
	d := f.waitImage("cluster1", "web", "nginx:2")
	if d.Spec.Template.Spec.NodeSelector != nil || d.Spec.ProgressDeadlineSeconds == nil || *d.Spec.ProgressDeadlineSeconds == 3 {
		t.Fatalf("cluster1's Deployment after the rollback: nodeSelector %v, progressDeadlineSeconds %v; want rev2's", d.Spec.Template.Spec.NodeSelector, d.Spec.ProgressDeadlineSeconds)
	}
	carries("cluster2", rev2)
	assertRevisionsRecorded(t, f, app, rev1, rev2)
}

// assertRevisionsRecorded checks that the application's revisions are ControllerRevisions of it.
func assertRevisionsRecorded(t *testing.T, f *fixture, app *v1alpha2.ApplicationConfiguration, names ...string) {
	t.Helper()
	for _, name := range names {
		rev := &appsv1.ControllerRevision{}
		if err := f.hub.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: name}, rev); err != nil {
			t.Fatalf("application revision %s: %v", name, err)
		}
		if rev.Labels[hub.LabelAppConfigName] != app.Name || rev.Revision == 0 {
			t.Fatalf("application revision %s: labels %v, number %d", name, rev.Labels, rev.Revision)
		}
	}
}

// A hub that stops mid-rollout and starts again carries on from the API's state alone: the canary keeps
// the new revision, the clusters of the next stage keep the stable one until it is approved, and the
// approval given while no hub ran completes it.
func TestRolloutCarriesOnAfterAHubRestart(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	app := f.appConfig("web", onClusters(clusters...), v1alpha2.ApplicationConfigurationComponent{ComponentName: "web"})
	app.Spec.Rollout = &v1alpha2.Rollout{Stages: []v1alpha2.RolloutStage{
		{Name: "canary", Clusters: []string{"cluster1"}},
		{Name: "rest", RequireApproval: true},
	}}
	f.createApp(app)
	waiting := func(a *v1alpha2.ApplicationConfiguration) bool {
		return a.Status.Rollout != nil && a.Status.Rollout.Phase == v1alpha2.RolloutWaitingForApproval
	}
	rev1 := f.waitApp("web", "first revision at the approval", waiting).Status.Rollout.Revision
	f.updateApp("web", func(a *v1alpha2.ApplicationConfiguration) {
		metav1.SetMetaDataAnnotation(&a.ObjectMeta, v1alpha2.AnnotationRolloutApprovals, rev1+"=rest")
	})
	f.waitApp("web", "first revision complete", func(a *v1alpha2.ApplicationConfiguration) bool {
		return a.Status.Rollout != nil && a.Status.Rollout.Phase == v1alpha2.RolloutComplete
	})
	f.updateComponent("web", func(c *v1alpha2.Component) { c.Spec.Workload = deploymentWorkload("web", "nginx:2") })
	rev2 := f.waitApp("web", "second revision at the approval", func(a *v1alpha2.ApplicationConfiguration) bool {
		return waiting(a) && a.Status.Rollout.Revision != rev1
	}).Status.Rollout.Revision
	f.waitImage("cluster1", "web", "nginx:2")

	f.stopHub()
	f.startHub(hubOptions(render.ApplyOnceOff))
	// A change of the AppConfig (not of its spec) brings it to the new hub at once; the rest still
	// waits, with the stable revision, for as long as it is looked at.
	f.updateApp("web", func(a *v1alpha2.ApplicationConfiguration) {
		metav1.SetMetaDataAnnotation(&a.ObjectMeta, "ferry.io/test-poke", "1")
	})
	f.consistently("after the restart the rest waits for its approval on the stable revision", 2*time.Second, func(ctx context.Context) (bool, error) {
		a, err := f.app(ctx, "web")
		if err != nil {
			return false, err
		}
		rev, err := f.carriedRevision(ctx, app, "cluster2")
		return waiting(a) && a.Status.Rollout.StableRevision == rev1 && rev == rev1, err
	})
	f.waitImage("cluster2", "web", "nginx:1")
	f.updateApp("web", func(a *v1alpha2.ApplicationConfiguration) {
		metav1.SetMetaDataAnnotation(&a.ObjectMeta, v1alpha2.AnnotationRolloutApprovals, rev2+"=rest")
	})
	f.waitApp("web", "second revision complete after the restart", func(a *v1alpha2.ApplicationConfiguration) bool {
		return a.Status.Rollout != nil && a.Status.Rollout.Phase == v1alpha2.RolloutComplete && a.Status.Rollout.StableRevision == rev2
	})
	f.waitImage("cluster2", "web", "nginx:2")
}

// A halt holds once the failed cluster recovers, until it is resumed: a canary past the rollout's own
// progressDeadline fails it; when its pods find a node after all, the rollout stays halted and the next
// stage untouched; `kubectl ferry rollout resume` (its annotation, taken away by the hub) lets it go on.
func TestRolloutHaltHoldsUntilResumed(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	app := f.appConfig("web", onClusters(clusters...), v1alpha2.ApplicationConfigurationComponent{ComponentName: "web"})
	app.Spec.Rollout = &v1alpha2.Rollout{Stages: []v1alpha2.RolloutStage{{Name: "canary", Clusters: []string{"cluster1"},
		RolloutConfig: v1alpha2.RolloutConfig{ProgressDeadline: &metav1.Duration{Duration: 2 * time.Second}}}}}
	f.createApp(app)
	phaseIs := func(p v1alpha2.RolloutPhase) func(*v1alpha2.ApplicationConfiguration) bool {
		return func(a *v1alpha2.ApplicationConfiguration) bool {
			return a.Status.Rollout != nil && a.Status.Rollout.Phase == p
		}
	}
	rev1 := f.waitApp("web", "first revision complete", phaseIs(v1alpha2.RolloutComplete)).Status.Rollout.Revision

	// Pods that only nodes labelled for this test take: none is, so the canary does not get healthy
	// within its 2s and the rollout halts.
	selector := "ferry.io/test-resume-" + f.ns
	f.updateComponent("web", func(c *v1alpha2.Component) {
		c.Spec.Workload.Raw = []byte(strings.Replace(string(deploymentWorkload("web", "nginx:2").Raw), `"spec":{"containers"`,
			`"spec":{"nodeSelector":{"`+selector+`":"true"},"containers"`, 1))
	})
	halted := f.waitApp("web", "halted past the canary's progressDeadline", phaseIs(v1alpha2.RolloutHalted))
	rev2 := halted.Status.Rollout.Revision
	if fl := halted.Status.Rollout.Failures; rev2 == rev1 || len(fl) != 1 || fl[0].Cluster != "cluster1" || fl[0].Reason != "ProgressDeadlineExceeded" {
		t.Fatalf("halted rollout: %+v, want cluster1 failed ProgressDeadlineExceeded", halted.Status.Rollout)
	}

	// The pods find nodes (on both clusters, for the revision to run on cluster2 once it gets it):
	// cluster1 turns healthy, and the rollout stays halted.
	for _, cluster := range clusters {
		nodes := &corev1.NodeList{}
		if err := f.spokes[cluster].List(t.Context(), nodes); err != nil || len(nodes.Items) == 0 {
			t.Fatalf("nodes of %s: %d, %v", cluster, len(nodes.Items), err)
		}
		for i := range nodes.Items {
			n := &nodes.Items[i]
			label := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+selector+`":"true"}}}`))
			if err := f.spokes[cluster].Patch(t.Context(), n, label); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				unlabel := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+selector+`":null}}}`))
				if err := f.spokes[cluster].Patch(context.Background(), n, unlabel); err != nil {
					t.Errorf("remove label %s of node %s on %s: %v", selector, n.Name, cluster, err)
				}
			})
		}
	}
	f.waitApp("web", "cluster1 healthy at the new revision", func(a *v1alpha2.ApplicationConfiguration) bool {
		return a.Status.Summary != nil && a.Status.Summary.Healthy == "2/2"
	})
	f.consistently("halted, cluster2 on the stable revision", 2*time.Second, func(ctx context.Context) (bool, error) {
		a, err := f.app(ctx, "web")
		if err != nil {
			return false, err
		}
		rev, err := f.carriedRevision(ctx, app, "cluster2")
		return phaseIs(v1alpha2.RolloutHalted)(a) && rev == rev1, err
	})

	f.updateApp("web", func(a *v1alpha2.ApplicationConfiguration) {
		metav1.SetMetaDataAnnotation(&a.ObjectMeta, v1alpha2.AnnotationRolloutResume, rev2)
	})
	done := f.waitApp("web", "resumed and complete", func(a *v1alpha2.ApplicationConfiguration) bool {
		return phaseIs(v1alpha2.RolloutComplete)(a) && a.Status.Rollout.StableRevision == rev2
	})
	if _, ok := done.Annotations[v1alpha2.AnnotationRolloutResume]; ok {
		t.Errorf("the resume annotation is still there once taken: a later halt of %s would be lifted by it", rev2)
	}
	f.waitImage("cluster2", "web", "nginx:2")
}

// carriedRevision is the application revision app's work on cluster carries.
func (f *fixture) carriedRevision(ctx context.Context, app *v1alpha2.ApplicationConfiguration, cluster string) (string, error) {
	mw, err := f.work(ctx, cluster, app.Name)
	if err != nil {
		return "", err
	}
	return hub.AppRevisionName(app, v1alpha2.WorkRevision(mw.Annotations)), nil
}
