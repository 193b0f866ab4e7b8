package hub

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/render"
)

type countingTransport struct {
	next   http.RoundTripper
	counts func(*http.Request) bool
	n      *atomic.Int64
}

func (c countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if c.counts(req) {
		c.n.Add(1)
	}
	return c.next.RoundTrip(req)
}

// A pass of the AppConfig reconcile ends in one status patch: none when nothing changed, one when it did,
// and two only when a rollout decision is recorded before the works follow it. The test runs each pass
// itself, on a real hub, with the reconciler's cache as ferry-hub runs it.
func TestAPassWritesTheStatusOnceAndOnlyWhenItChanged(t *testing.T) {
	t.Parallel() // a hub of its own: it runs beside the others that need none of the shared clusters
	env := localcluster.StartForTest(t, localcluster.Options{Hub: localcluster.ClusterSpec{Name: "hub"}})
	ctx := t.Context()
	scheme, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Hub.Config)
	statusWrites := &atomic.Int64{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return countingTransport{next: rt, n: statusWrites, counts: func(req *http.Request) bool {
			return req.Method != http.MethodGet && strings.Contains(req.URL.Path, "/applicationconfigurations/") && strings.HasSuffix(req.URL.Path, "/status")
		}}
	})
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Cache: CacheOptions(), Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	// Component revisions by their controller, as ferry-hub records them; the AppConfig reconciler with
	// its cache but no controller: each pass is the test's.
	if err := (&RevisionReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), RevisionsKept: DefaultRevisionsKept}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	r := &AppConfigReconciler{Client: mgr.GetClient(), Mapper: mgr.GetRESTMapper(), ApplyOnceOnly: render.ApplyOnceOff}
	if err := r.setUpCache(mgr); err != nil {
		t.Fatal(err)
	}
	ManifestWorkChecksCounted.RLock()
	t.Cleanup(ManifestWorkChecksCounted.RUnlock) // after the manager stopped
	mgrCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	admin, err := client.New(env.Hub.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cluster1", "cluster2"} {
		for _, o := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}} {
			if err := admin.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := env.Hub.BindGlobalClusterSet(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	web := &v1alpha2.Component{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: v1alpha2.ComponentSpec{Workload: runtime.RawExtension{Raw: []byte(
		`{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"b"}}`)}}}
	app := &v1alpha2.ApplicationConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default"}, Spec: v1alpha2.ApplicationConfigurationSpec{
		Placement:  &v1alpha2.Placement{Clusters: []string{"cluster1", "cluster2"}},
		Components: []v1alpha2.ApplicationConfigurationComponent{{ComponentName: "web"}}}}
	for _, o := range []client.Object{web, app} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	poll := func(what string, cond func(ctx context.Context) bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			return cond(ctx), nil
		}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	poll("the Component's first revision", func(ctx context.Context) bool {
		c := &v1alpha2.Component{}
		return r.Client.Get(ctx, client.ObjectKeyFromObject(web), c) == nil && c.Status.LatestRevision != nil
	})
	// pass runs one reconcile once the cache shows the AppConfig as the API server has it (as the
	// watch event that brings a reconcile does) and returns the status writes it made.
	pass := func() int64 {
		t.Helper()
		poll("the cache caught up with the AppConfig", func(ctx context.Context) bool {
			stored, cached := &v1alpha2.ApplicationConfiguration{}, &v1alpha2.ApplicationConfiguration{}
			return admin.Get(ctx, client.ObjectKeyFromObject(app), stored) == nil && r.Client.Get(ctx, client.ObjectKeyFromObject(app), cached) == nil &&
				stored.ResourceVersion == cached.ResourceVersion
		})
		before := statusWrites.Load()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(app)}); err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		return statusWrites.Load() - before
	}
	update := func(change func(*v1alpha2.ApplicationConfiguration)) {
		t.Helper()
		poll("the AppConfig changed", func(ctx context.Context) bool {
			a := &v1alpha2.ApplicationConfiguration{}
			if err := admin.Get(ctx, client.ObjectKeyFromObject(app), a); err != nil {
				return false
			}
			change(a)
			return admin.Update(ctx, a) == nil
		})
	}

	if n := pass(); n != 1 {
		t.Errorf("the first pass wrote the status %d times, want 1", n)
	}
	if n := pass(); n != 0 {
		t.Errorf("a pass with nothing changed wrote the status %d times, want 0", n)
	}
	update(func(a *v1alpha2.ApplicationConfiguration) { a.Spec.Placement.Clusters = []string{"cluster1"} })
	if n := pass(); n != 1 {
		t.Errorf("a pass after a change of placement wrote the status %d times, want 1", n)
	}
	update(func(a *v1alpha2.ApplicationConfiguration) {
		a.Spec.Rollout = &v1alpha2.Rollout{Stages: []v1alpha2.RolloutStage{{Name: "all"}}}
	})
	if n := pass(); n != 2 {
		t.Errorf("a pass deciding a rollout wrote the status %d times, want 2: the decision, then the status", n)
	}

	// A status patch computed from a status no longer stored — here the hub's record of its last write
	// names a version the API server never gave — is refused by its test of that version, and the
	// status is written whole in the same pass.
	key := client.ObjectKeyFromObject(app)
	before := &v1alpha2.ApplicationConfiguration{}
	if err := admin.Get(ctx, key, before); err != nil {
		t.Fatal(err)
	}
	recorded := before.Status.DeepCopy()
	recorded.Summary = &v1alpha2.Summary{Clusters: 7}
	recordedJSON, err := statusJSON(recorded)
	if err != nil {
		t.Fatal(err)
	}
	r.writtenStatuses.record(key, writtenStatus{resourceVersion: "999999999", status: recorded, json: recordedJSON})
	whole := testutil.ToFloat64(statusPatches.WithLabelValues("whole"))
	if n := pass(); n != 2 {
		t.Errorf("a pass from a status no longer stored wrote %d times, want 2: the refused changes, then the status whole", n)
	}
	if n := testutil.ToFloat64(statusPatches.WithLabelValues("whole")) - whole; n != 1 {
		t.Errorf("ferry_hub_appconfig_status_patches_total{how=whole} grew by %v, want 1", n)
	}
	stored := &v1alpha2.ApplicationConfiguration{}
	if err := admin.Get(ctx, key, stored); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(stored.Status, before.Status) {
		t.Errorf("the status written whole is %+v; want the one stored before, %+v", stored.Status, before.Status)
	}
	if n := pass(); n != 0 {
		t.Errorf("the next pass with nothing changed wrote the status %d times, want 0", n)
	}

	// Clusters listed after another are sent as copies of their neighbour, renamed, and the API server
	// applies those copies to the stored status exactly.
	degraded := func(name string) v1alpha2.ClusterStatus {
		return v1alpha2.ClusterStatus{Name: name, ManifestWork: "default.shop", Applied: metav1.ConditionTrue, Available: metav1.ConditionTrue,
			Health: v1alpha2.Degraded, Manifests: []v1alpha2.ManifestStatus{{Ordinal: 0, APIVersion: "apps/v1", Kind: "Deployment", Name: "web",
				Namespace: "default", Applied: metav1.ConditionTrue, Available: metav1.ConditionTrue, Health: v1alpha2.Degraded,
				Message: "Progress deadline exceeded", Feedback: []v1alpha2.FeedbackValue{{Name: "ReadyReplicas", Value: "0"}, {Name: "Replicas", Value: "2"}}}}}
	}
	for _, names := range [][]string{{"cluster1"}, {"cluster1", "cluster2", "cluster3"}} {
		cached := &v1alpha2.ApplicationConfiguration{}
		if err := r.Client.Get(ctx, key, cached); err != nil {
			t.Fatal(err)
		}
		want := cached.Status.DeepCopy()
		want.Clusters = nil
		for _, name := range names {
			want.Clusters = append(want.Clusters, degraded(name))
		}
		bytes, whole := testutil.ToFloat64(statusPatchBytes), testutil.ToFloat64(statusPatches.WithLabelValues("whole"))
		base, err := r.statusBase(cached)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.writeStatus(ctx, cached, base, want); err != nil {
			t.Fatal(err)
		}
		if n := testutil.ToFloat64(statusPatches.WithLabelValues("whole")) - whole; n != 0 {
			t.Errorf("listing %v wrote the status whole %v times, want 0", names, n)
		}
		if entry, _ := json.Marshal(degraded("cluster2")); len(names) > 1 && testutil.ToFloat64(statusPatchBytes)-bytes >= float64(len(entry)) {
			t.Errorf("listing two more clusters sent %v bytes, more than one of them in full (%d bytes)", testutil.ToFloat64(statusPatchBytes)-bytes, len(entry))
		}
		stored := &v1alpha2.ApplicationConfiguration{}
		if err := admin.Get(ctx, key, stored); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(stored.Status, *want) {
			t.Errorf("the status stored is\n%+v\nwant\n%+v", stored.Status, *want)
		}
	}

	// A pass on a cache that does not show the hub's last write yet builds on that write: what the pass
	// does not compute again — the workloads, when it rendered nothing — stays as written, not as the
	// cache had it before.
	stale := &v1alpha2.ApplicationConfiguration{}
	if err := r.Client.Get(ctx, key, stale); err != nil {
		t.Fatal(err)
	}
	written := stale.Status.DeepCopy()
	written.Workloads = []v1alpha2.WorkloadStatus{{ComponentName: "web", ComponentRevisionName: "web-written-since",
		Reference: v1alpha2.TypedReference{APIVersion: "v1", Kind: "ConfigMap", Name: "web"}}}
	base, err := r.statusBase(stale)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.writeStatus(ctx, stale, base, written); err != nil {
		t.Fatal(err)
	}
	renderFailed := &metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: "RenderFailed", Message: "the Component cannot be rendered"}
	if err := r.patchStatus(ctx, &appConfigPass{key: key, app: stale, ready: renderFailed}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Get(ctx, key, stored); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(stored.Status.Workloads, written.Workloads) {
		t.Errorf("a pass on the cache before the hub's last write left the workloads %+v; want them as written, %+v", stored.Status.Workloads, written.Workloads)
	}
	if c := meta.FindStatusCondition(stored.Status.Conditions, ConditionReady); c == nil || c.Reason != "RenderFailed" {
		t.Errorf("Ready is %+v after the pass, want RenderFailed", c)
	}
}
