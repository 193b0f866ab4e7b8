package hub_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/internal/statusview"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
	"github.com/ferry-mc/ferry/pkg/render"
)

// A write conflict is not a failure: while 100 AppConfigs on both clusters are delivered, applied by
// the real agents (which write the works' status all the while) and then all changed at once by a new
// image in their Component's settings, no AppConfig ever shows Ready=False and none gets a Warning event; every one
// ends Ready with both works applied at the new image.
func TestHubConflictsAreNeverShownToTheUser(t *testing.T) {
	const apps = 100
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	// A component each: AppConfigs delivering one object would be a clash of their own (the agent lets
	// the first work keep it).
	names := make([]string, apps)
	for i := range names {
		names[i] = fmt.Sprintf("app-%03d", i)
		f.mustCreate(f.hub, f.settingsComponent(names[i], "nginx:1"))
	}
	for _, name := range names {
		f.waitLatest(name, name+"-v1")
	}
	readiness := f.watchReadiness()
	for _, name := range names {
		f.mustCreate(f.hub, f.appConfig(name, onClusters(clusters...), v1alpha2.ApplicationConfigurationComponent{ComponentName: name}))
	}
	t.Cleanup(func() { f.deleteAppsWithin(names, 5*time.Minute) })
	f.within("every AppConfig delivered and applied at v1", 5*time.Minute, f.allDeliveredAt(names, "v1", "nginx:1"))

	for _, name := range names {
		f.updateComponent(name, func(comp *v1alpha2.Component) { comp.Spec.Workload = settingsWorkload("nginx:2") })
	}
	f.within("every AppConfig delivered and applied at v2", 5*time.Minute, f.allDeliveredAt(names, "v2", "nginx:2"))

	readiness.stop()
	if falls := readiness.falls(); len(falls) > 0 {
		t.Errorf("Ready went False %d times; want never. First ones:\n%s", len(falls), strings.Join(falls[:min(10, len(falls))], "\n"))
	}
	if warnings := f.warningEvents(t.Context()); len(warnings) > 0 {
		t.Errorf("%d Warning events on the AppConfigs; want none. First ones:\n%s", len(warnings), strings.Join(warnings[:min(10, len(warnings))], "\n"))
	}
}

// The race of the test above made certain: the agent writes a ManifestWork's status between the hub's
// read of the work (from its cache) and the hub's write of the work's new spec. The test plays that
// agent on a managed cluster of its own: every first write of a work's spec is preceded by a status
// write, so the hub's cached version of the work is outdated when its write arrives. The write is not
// refused for it (no conflict, no read and write again: a fleet reporting while a change rolls over it
// would refuse most writes), the agent's status stays, and the AppConfig never shows a thing.
func TestHubWriteRacingTheAgentsStatusWriteIsNotAFailure(t *testing.T) {
	f := setup(t)
	cluster := "racer-" + f.ns
	f.addManagedCluster(cluster, nil)

	var raced, refused atomic.Int64
	seen := sync.Map{} // work name and generation it was raced at → true
	f.wrapHubTransport(func(rt http.RoundTripper) http.RoundTripper {
		prefix := "/apis/work.open-cluster-management.io/v1/namespaces/" + cluster + "/manifestworks/"
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			name, isWork := strings.CutPrefix(req.URL.Path, prefix)
			isSpecWrite := (req.Method == http.MethodPut || req.Method == http.MethodPatch) && isWork && !strings.Contains(name, "/")
			if isSpecWrite {
				if _, already := seen.LoadOrStore(name, true); !already {
					// The agent reports on the work before the hub's write reaches the API server.
					if err := f.writeWorkStatus(req.Context(), cluster, name); err != nil {
						t.Errorf("write the status of ManifestWork %s/%s as its agent: %v", cluster, name, err)
					}
					raced.Add(1)
				}
			}
			resp, err := rt.RoundTrip(req)
			if isSpecWrite && err == nil && resp.StatusCode == http.StatusConflict {
				refused.Add(1)
			}
			return resp, err
		})
	})
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	f.waitLatest("web", "web-v1")
	readiness := f.watchReadiness()
	f.createApp(f.appConfig("shop", onClusters(cluster), v1alpha2.ApplicationConfigurationComponent{ComponentName: "web"}))
	f.waitApp("shop", "Ready", isReady)
	f.waitWork(cluster, "shop", "carrying nginx:1", func(mw *workv1.ManifestWork) bool { return workCarries(mw, "nginx:1") })

	t.Log("delivered at web-v1")
	f.setImage("web", "nginx:2")
	mw := f.waitWork(cluster, "shop", "carrying nginx:2", func(mw *workv1.ManifestWork) bool { return workCarries(mw, "nginx:2") })
	f.waitApp("shop", "Ready at web-v2", func(app *v1alpha2.ApplicationConfiguration) bool {
		return isReady(app) && len(app.Status.Workloads) == 1 && app.Status.Workloads[0].ComponentRevisionName == "web-v2"
	})
	t.Log("delivered at web-v2")
	if raced.Load() == 0 {
		t.Fatal("the hub never updated the ManifestWork: no race was made")
	}
	if n := refused.Load(); n > 0 {
		t.Errorf("the hub's write of the work's spec was refused %d times for the agent's status write (409 Conflict); want never", n)
	}
	if c := findCondition(mw.Status.Conditions, agentReported); c == nil {
		t.Errorf("the status the agent wrote was lost: conditions %+v", mw.Status.Conditions)
	}
	readiness.stop()
	if falls := readiness.falls(); len(falls) > 0 {
		t.Errorf("Ready went False; want never:\n%s", strings.Join(falls, "\n"))
	}
	if warnings := f.warningEvents(t.Context()); len(warnings) > 0 {
		t.Errorf("Warning events on the AppConfig; want none:\n%s", strings.Join(warnings, "\n"))
	}
}

// agentReported is the condition the test writes into a work's status when it plays the agent.
const agentReported = "ferry.io/test-agent-reported"

// writeWorkStatus writes a ManifestWork's status as its agent would, moving its resourceVersion on.
func (f *fixture) writeWorkStatus(ctx context.Context, cluster, name string) error {
	mw := &workv1.ManifestWork{}
	if err := f.hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: name}, mw); err != nil {
		return err
	}
	mw.Status.Conditions = append(mw.Status.Conditions, metav1.Condition{Type: agentReported, Status: metav1.ConditionTrue,
		Reason: "Reported", Message: "the test plays the agent", ObservedGeneration: mw.Generation, LastTransitionTime: metav1.Now()})
	return f.hub.Status().Update(ctx, mw)
}

// workCarries reports whether some manifest of the work mentions s.
func workCarries(mw *workv1.ManifestWork, s string) bool {
	for _, m := range mw.Spec.Workload.Manifests {
		if strings.Contains(string(m.Raw), s) {
			return true
		}
	}
	return false
}

// wrapHubTransport makes the hub controllers this test starts send their requests through wrap.
func (f *fixture) wrapHubTransport(wrap func(http.RoundTripper) http.RoundTripper) {
	f.t.Helper()
	if f.hubRunning {
		f.t.Fatal("wrap the hub's transport before starting the hub controllers")
	}
	own := *f.fleet // the fleet is shared: only this test's copy gets the wrapped credential
	own.hubController = rest.CopyConfig(f.hubController)
	own.hubController.Wrap(wrap)
	f.fleet = &own
}

// addManagedCluster registers a ManagedCluster with labels on the hub, with its cluster namespace, for
// the test's lifetime. No agent runs for it.
func (f *fixture) addManagedCluster(name string, labels map[string]string) *clusterv1.ManagedCluster {
	f.t.Helper()
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	f.mustCreate(f.hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, mc)
	f.t.Cleanup(func() {
		if err := f.hub.Delete(context.Background(), mc); client.IgnoreNotFound(err) != nil {
			f.t.Errorf("delete ManagedCluster %s: %v", name, err)
		}
	})
	return mc
}

// readinessWatch records every change of the Ready condition of the AppConfigs of a test's namespace,
// from a watch started before they are created.
type readinessWatch struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	last   map[string]metav1.ConditionStatus // AppConfig → Ready's status last seen
	falled []string                          // each move of Ready to False: AppConfig, reason, message
}

// watchReadiness starts watching the AppConfigs of the test's namespace until stop.
func (f *fixture) watchReadiness() *readinessWatch {
	f.t.Helper()
	watcher, err := client.NewWithWatch(f.env.Hub.Config, client.Options{Scheme: f.scheme})
	if err != nil {
		f.t.Fatal(err)
	}
	list := &v1alpha2.ApplicationConfigurationList{}
	if err := watcher.List(f.t.Context(), list, client.InNamespace(f.ns)); err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rw := &readinessWatch{cancel: cancel, done: make(chan struct{}), last: map[string]metav1.ConditionStatus{}}
	for i := range list.Items {
		rw.observe(&list.Items[i])
	}
	from := list.ResourceVersion
	go func() {
		defer close(rw.done)
		// A watch the API server ends is resumed where it left off, so that no change is missed.
		for ctx.Err() == nil {
			w, err := watcher.Watch(ctx, &v1alpha2.ApplicationConfigurationList{}, client.InNamespace(f.ns),
				&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: from}})
			if err != nil {
				if ctx.Err() == nil {
					f.t.Errorf("watch AppConfigs: %v", err)
				}
				return
			}
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					if ctx.Err() == nil {
						f.t.Errorf("watch AppConfigs: %v", ev.Object)
					}
					w.Stop()
					return
				}
				if app, ok := ev.Object.(*v1alpha2.ApplicationConfiguration); ok {
					from = app.ResourceVersion
					rw.observe(app)
				}
			}
		}
	}()
	f.t.Cleanup(rw.stop)
	return rw
}

func (rw *readinessWatch) observe(app *v1alpha2.ApplicationConfiguration) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	for _, c := range app.Status.Conditions {
		if c.Type != hub.ConditionReady {
			continue
		}
		if c.Status == metav1.ConditionFalse && rw.last[app.Name] != metav1.ConditionFalse {
			rw.falled = append(rw.falled, fmt.Sprintf("%s: %s: %s", app.Name, c.Reason, c.Message))
		}
		rw.last[app.Name] = c.Status
	}
}

func (rw *readinessWatch) stop() {
	rw.cancel()
	<-rw.done
}

// falls are the moves of Ready to False seen.
func (rw *readinessWatch) falls() []string {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return append([]string(nil), rw.falled...)
}

// warningEvents lists the Warning events about AppConfigs of the test's namespace.
func (f *fixture) warningEvents(ctx context.Context) []string {
	f.t.Helper()
	events := &eventsv1.EventList{}
	if err := f.hub.List(ctx, events, client.InNamespace(f.ns)); err != nil {
		f.t.Fatalf("list events: %v", err)
	}
	var out []string
	for _, e := range events.Items {
		if e.Type == corev1.EventTypeWarning && e.Regarding.Kind == "ApplicationConfiguration" {
			out = append(out, fmt.Sprintf("%s: %s: %s", e.Regarding.Name, e.Reason, e.Note))
		}
	}
	return out
}

// allDeliveredAt reports whether every AppConfig names (each of a component of its own name) is Ready at revision vN with both clusters applied
// and available, and every ManifestWork of theirs is applied at its generation and carries image.
func (f *fixture) allDeliveredAt(names []string, revision, image string) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		list := &v1alpha2.ApplicationConfigurationList{}
		if err := f.hub.List(ctx, list, client.InNamespace(f.ns)); err != nil {
			return false, err
		}
		// One list of the namespace's works, not one per AppConfig: a poll of 100 lists would load the
		// hub's API server more than the hub under test does.
		works := &workv1.ManifestWorkList{}
		if err := f.hub.List(ctx, works, client.MatchingLabels{hub.LabelAppConfigNamespace: f.ns}); err != nil {
			return false, err
		}
		worksOf := map[string][]workv1.ManifestWork{}
		for _, w := range works.Items {
			worksOf[w.Labels[hub.LabelAppConfigName]] = append(worksOf[w.Labels[hub.LabelAppConfigName]], w)
		}
		done := 0
		var notYet []string
		for i := range list.Items {
			app := &list.Items[i]
			if deliveredTo(app, worksOf[app.Name], clusters...) && len(app.Status.Workloads) == 1 && app.Status.Workloads[0].ComponentRevisionName == app.Name+"-"+revision {
				done++
			} else if len(notYet) < 3 {
				notYet = append(notYet, describeDelivery(app, worksOf[app.Name]))
			}
		}
		if done != len(names) {
			return false, fmt.Errorf("%d of %d AppConfigs delivered at %s; not yet: %s", done, len(names), revision, strings.Join(notYet, "; "))
		}
		applied := 0
		for i := range works.Items {
			if workApplied(&works.Items[i]) && workCarries(&works.Items[i], image) {
				applied++
			}
		}
		if applied != len(names)*len(clusters) {
			return false, fmt.Errorf("%d of %d ManifestWorks applied with %s", applied, len(names)*len(clusters), image)
		}
		return true, nil
	}
}

// within polls cond every 200ms until it holds, failing the test after d.
func (f *fixture) within(what string, d time.Duration, cond func(ctx context.Context) (bool, error)) {
	f.t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var lastErr error
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if ctx.Err() == nil {
			lastErr = err // not what the deadline cut short
		}
		return ok && err == nil, nil
	})
	if err != nil {
		f.t.Fatalf("%s: %v (last: %v)", what, err, lastErr)
	}
	f.t.Logf("%s after %v", what, time.Since(start).Round(time.Millisecond))
}

// deleteAppsWithin deletes AppConfigs and waits up to d until they and their ManifestWorks are gone.
func (f *fixture) deleteAppsWithin(names []string, d time.Duration) {
	f.t.Helper()
	for _, name := range names {
		app := &v1alpha2.ApplicationConfiguration{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name}}
		if err := f.hub.Delete(context.Background(), app); client.IgnoreNotFound(err) != nil {
			f.t.Errorf("delete AppConfig %s: %v", name, err)
		}
	}
	f.within("AppConfigs and their ManifestWorks gone", d, func(ctx context.Context) (bool, error) {
		list := &v1alpha2.ApplicationConfigurationList{}
		if err := f.hub.List(ctx, list, client.InNamespace(f.ns)); err != nil || len(list.Items) > 0 {
			return false, err
		}
		works := &workv1.ManifestWorkList{}
		if err := f.hub.List(ctx, works, client.MatchingLabels{hub.LabelAppConfigNamespace: f.ns}); err != nil {
			return false, err
		}
		return len(works.Items) == 0, nil
	})
}

// describeDelivery says what an AppConfig's status and its works' reports show, for a failure message.
func describeDelivery(app *v1alpha2.ApplicationConfiguration, works []workv1.ManifestWork) string {
	out := fmt.Sprintf("%s (generation %d): ready %+v, summary %+v, listed %+v, workloads %+v;", app.Name, app.Generation, ready(app), app.Status.Summary, app.Status.Clusters, app.Status.Workloads)
	for _, w := range statusview.ForAppConfig(app, works).Clusters {
		out += fmt.Sprintf(" work on %s applied %s available %s health %s manifests %+v;", w.Cluster, w.Applied, w.Available, w.Health, w.Manifests)
	}
	for i := range works {
		out += fmt.Sprintf(" %s generation %d conditions %+v;", works[i].Namespace, works[i].Generation, works[i].Status.Conditions)
	}
	return out
}

// settingsComponent is a Component whose workload is a ConfigMap naming an image. Delivered 200 times,
// it loads the spokes with what the agents apply and no more: 200 Deployments would also have the
// spokes' controllers make ReplicaSets and pods of them, and delete those again before the works go.
func (f *fixture) settingsComponent(name, image string) *v1alpha2.Component {
	return &v1alpha2.Component{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, Spec: v1alpha2.ComponentSpec{Workload: settingsWorkload(image)}}
}

func settingsWorkload(image string) runtime.RawExtension {
	return runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","data":{"image":"` + image + `"}}`)}
}
