package hub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ferry-mc/ferry/internal/testing/fleetsim"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
	"github.com/ferry-mc/ferry/pkg/render"
)

// An AppConfig on a fleet of 1,000 simulated clusters (a hub of its own, agents played by
// internal/testing/fleetsim writing status as ferry-agent does): its status stays far below 100 KiB before
// any cluster reports, when all are healthy and when many are degraded; its summary follows the
// agents' reports; it lists the first clusters that are not fine and counts the rest; and a fleet
// whose reports do not change costs the hub no write. Reports cost it no pass over the fleet's works
// either, while a work someone deletes on the hub is put back at once.
func TestAppConfigStatusOfAFleetIsBoundedAndFollowsItsAgents(t *testing.T) {
	t.Parallel() // a hub of its own: it runs beside the others that need none of the shared clusters
	// Enough clusters that most are counted, not listed; how the summary keeps up with more is
	// make bench-fleet's (1,000 to 10,000 clusters).
	const clusters, degraded = 1000, 300
	env := localcluster.StartForTest(t, localcluster.Options{})
	ctx := t.Context()
	fast := fleetsim.FastConfig(env.Hub.Config, 1000, 2000)
	names, err := fleetsim.RegisterClusters(ctx, fast, fleetsim.ClusterOptions{Count: clusters})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Hub.BindGlobalClusterSet(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	scheme, err := hub.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(fast, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}

	// The hub controllers as ferry-hub runs them (its cache, its rate limits), counting their writes.
	cfg := rest.CopyConfig(env.Hub.Config)
	cfg.QPS, cfg.Burst = hub.DefaultKubeAPIQPS, hub.DefaultKubeAPIBurst
	hubWrites := countWrites(cfg)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Cache: hub.CacheOptions(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.SetupWithManager(mgr, hub.Options{ApplyOnceOnly: render.ApplyOnceOff, RevisionsKept: 3, EarlierRevisionsKept: 2, Workers: 10}); err != nil {
		t.Fatal(err)
	}
	mgrCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() {
		t.Logf("PHASE stop-begin %s", time.Now().Format("15:04:05.000"))
		defer func() { t.Logf("PHASE stop-end %s", time.Now().Format("15:04:05.000")) }()
		stop()
		if err := <-done; err != nil {
			t.Errorf("hub manager: %v", err)
		}
	})

	comp := &v1alpha2.Component{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: v1alpha2.ComponentSpec{Workload: runtime.RawExtension{Raw: []byte(
		`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1"}]}}}}`)}}}
	app := &v1alpha2.ApplicationConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: "default"}, Spec: v1alpha2.ApplicationConfigurationSpec{
		Components: []v1alpha2.ApplicationConfigurationComponent{{ComponentName: "web"}}, Placement: &v1alpha2.Placement{ClusterSelector: fleetsim.Selector()}}}
	for _, o := range []client.Object{comp, app} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	works, err := workclient.NewForConfig(fast)
	if err != nil {
		t.Fatal(err)
	}
	tracker, err := fleetsim.NewWorkTracker(works)
	if err != nil {
		t.Fatal(err)
	}
	if err := tracker.Start(ctx); err != nil {
		t.Fatal(err)
	}
	largest := 0
	// waitSummary waits until the AppConfig's status says want, checking its size on every look.
	waitSummary := func(what string, check func(*v1alpha2.ApplicationConfiguration) bool) *v1alpha2.ApplicationConfiguration {
		t.Helper()
		var last *v1alpha2.ApplicationConfiguration
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			got := &v1alpha2.ApplicationConfiguration{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(app), got); err != nil {
				return false, err
			}
			raw, err := json.Marshal(got)
			if err != nil {
				return false, err
			}
			largest, last = max(largest, len(raw)), got
			return check(got), nil
		})
		if err != nil {
			t.Fatalf("%s: %v; %d works tracked; last summary %+v, %d clusters listed, %d omitted", what, err, tracker.Count(), last.Status.Summary, len(last.Status.Clusters), last.Status.OmittedClusters)
		}
		return last
	}
	summarized := func(applied, healthy int) func(*v1alpha2.ApplicationConfiguration) bool {
		return func(a *v1alpha2.ApplicationConfiguration) bool {
			s := a.Status.Summary
			return s != nil && s.Clusters == clusters && s.Applied == fmt.Sprintf("%d/%d", applied, clusters) &&
				s.Available == fmt.Sprintf("%d/%d", applied, clusters) && s.Healthy == fmt.Sprintf("%d/%d", healthy, clusters)
		}
	}

	// Delivered, not reported yet: every cluster is not fine.
	got := waitSummary("a work on every cluster, none reported", summarized(0, 0))
	checkListed(t, got, names[:v1alpha2.MaxClustersListed], clusters-v1alpha2.MaxClustersListed)
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return tracker.Count() == clusters, nil
	}); err != nil {
		t.Fatalf("%d of %d works tracked: %v", tracker.Count(), clusters, err)
	}
	checkCreatedEvents(t, fast, app, clusters)

	agents, err := fleetsim.NewAgents(works, fleetsim.AgentOptions{Rate: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agents.WriteAll(ctx, tracker.Works(), fleetsim.Healthy); err != nil {
		t.Fatal(err)
	}
	got = waitSummary("every cluster reported healthy", summarized(clusters, clusters))
	checkListed(t, got, nil, 0)
	// The checks counter is the test process's: no other test's hub runs while this one counts.
	hub.ManifestWorkChecksCounted.Lock()
	countingDone := sync.OnceFunc(hub.ManifestWorkChecksCounted.Unlock)
	t.Cleanup(countingDone) // should the test end before it counted
	checksBeforeReports := manifestWorkChecks(t)

	// Degraded on every few clusters, from the 7th on: listed by name from there, the rest counted.
	var sick []*fleetsim.Work
	var sickNames []string
	for i := 7; len(sick) < degraded; i += clusters / degraded {
		w, ok := tracker.Get(names[i], hub.ManifestWorkName(app))
		if !ok {
			t.Fatalf("no work tracked on %s", names[i])
		}
		sick, sickNames = append(sick, w), append(sickNames, names[i])
	}
	if _, err := agents.WriteAll(ctx, sick, fleetsim.Degraded); err != nil {
		t.Fatal(err)
	}
	got = waitSummary(fmt.Sprintf("%d clusters degraded", degraded), summarized(clusters, clusters-degraded))
	checkListed(t, got, sickNames[:v1alpha2.MaxClustersListed], degraded-v1alpha2.MaxClustersListed)
	for _, cs := range got.Status.Clusters {
		if cs.Health != v1alpha2.Degraded || len(cs.Manifests) != 1 || cs.Manifests[0].Message == "" {
			t.Errorf("listed %s: %+v, want Degraded with its Deployment and why", cs.Name, cs)
		}
	}

	// The same reports again change nothing the hub shows: no write.
	before := hubWrites.Load()
	if _, err := agents.WriteAll(ctx, sick[:50], fleetsim.Degraded); err != nil {
		t.Fatal(err)
	}
	if _, err := agents.WriteAll(ctx, []*fleetsim.Work{sick[0]}, fleetsim.Healthy); err != nil {
		t.Fatal(err) // a change after them: once the hub shows it, it has seen the repeats too
	}
	got = waitSummary("the first degraded cluster healed", summarized(clusters, clusters-degraded+1))
	// One write for the change; one more may be the previous phase's last status write still on its
	// way. A write per unchanged report would be fifty.
	if w := hubWrites.Load() - before; w > 2 {
		t.Errorf("the hub wrote %d times for 50 unchanged reports and one change, want at most 2 (the AppConfig's status)", w)
	}
	checkListed(t, got, sickNames[1:v1alpha2.MaxClustersListed+1], degraded-1-v1alpha2.MaxClustersListed)
	n := manifestWorkChecks(t) - checksBeforeReports
	countingDone()
	if n != 0 {
		t.Errorf("the hub checked %v ManifestWorks against the rendered spec for %d status reports, want none: a report changes nothing to deliver", n, degraded+51)
	}

	// The rest heal as a stream of reports, 100 a second, each changing the summary: the hub folds
	// them in once per --report-batch, not once per round trip of its own status write.
	streaming, err := fleetsim.NewAgents(works, fleetsim.AgentOptions{Rate: 100})
	if err != nil {
		t.Fatal(err)
	}
	before, start := hubWrites.Load(), time.Now()
	if _, err := streaming.WriteAll(ctx, sick[1:], fleetsim.Healthy); err != nil {
		t.Fatal(err)
	}
	waitSummary("every degraded cluster healed", summarized(clusters, clusters))
	took := time.Since(start)
	// One write per batch the stream spans, one for the batch the last report opened, one in flight.
	allowed := int64(took/hub.DefaultReportBatch) + 2
	w := hubWrites.Load() - before
	t.Logf("a stream of %d reports over %s: %d hub writes", len(sick)-1, took.Round(time.Millisecond), w)
	if w > allowed {
		t.Errorf("the hub wrote %d times while %d reports came over %s, want at most %d: one status write per %s", w, len(sick)-1, took.Round(time.Millisecond), allowed, hub.DefaultReportBatch)
	}

	// Someone deletes a work on the hub: the hub puts it back.
	deleted := &workv1.ManifestWork{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: names[2], Name: hub.ManifestWorkName(app)}, deleted); err != nil {
		t.Fatal(err)
	}
	t.Logf("PHASE delete %s", time.Now().Format("15:04:05.000"))
	if err := c.Delete(ctx, deleted); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		back := &workv1.ManifestWork{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(deleted), back); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return back.UID != deleted.UID, nil
	}); err != nil {
		t.Fatalf("the deleted work not put back within 10s: %v", err)
	}

	t.Logf("PHASE putback %s", time.Now().Format("15:04:05.000"))
	t.Cleanup(func() { t.Logf("PHASE cleanup-end %s", time.Now().Format("15:04:05.000")) })
	t.Logf("largest AppConfig seen: %d bytes", largest)
	if largest > 100<<10 {
		t.Errorf("the AppConfig reached %d bytes, want under 100 KiB", largest)
	}
}

// checkListed checks that the AppConfig's status lists exactly these clusters, in order, and counts
// omitted more.
func checkListed(t *testing.T, app *v1alpha2.ApplicationConfiguration, want []string, omitted int) {
	t.Helper()
	var listed []string
	for _, cs := range app.Status.Clusters {
		listed = append(listed, cs.Name)
	}
	if fmt.Sprint(listed) != fmt.Sprint(want) || int(app.Status.OmittedClusters) != omitted {
		t.Errorf("listed %v and %d omitted, want %v and %d", listed, app.Status.OmittedClusters, want, omitted)
	}
}

// manifestWorkChecks is how many ManifestWorks the hub controllers of this process have checked against
// their AppConfig's rendered spec (ferry_hub_manifestwork_checks_total).
func manifestWorkChecks(t *testing.T) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() == "ferry_hub_manifestwork_checks_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("ferry_hub_manifestwork_checks_total is not registered")
	return 0
}

// checkCreatedEvents checks that the API server took the hub's events of the works it created for app
// on a fleet of clusters: together they account for every cluster (each names a few and counts the
// rest), and none is over the API server's 1,024 bytes, past which it rejects an event and it is lost.
func checkCreatedEvents(t *testing.T, cfg *rest.Config, app *v1alpha2.ApplicationConfiguration, clusters int) {
	t.Helper()
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	prefix := "created ManifestWork " + hub.ManifestWorkName(app) + " on "
	var notes []string
	accounted := 0
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := kube.EventsV1().Events(app.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		notes, accounted = nil, 0
		for _, e := range list.Items {
			if e.Regarding.Name != app.Name || e.Reason != "ManifestWorkCreated" {
				continue
			}
			notes = append(notes, e.Note)
			named, counted, ok := strings.Cut(strings.TrimPrefix(e.Note, prefix), " and ")
			accounted += strings.Count(named, ", ") + 1
			if ok {
				more, err := strconv.Atoi(strings.TrimSuffix(counted, " more"))
				if err != nil {
					return false, fmt.Errorf("event note %q: the clusters it does not name are not counted: %w", e.Note, err)
				}
				accounted += more
			}
		}
		return accounted >= clusters, nil
	})
	if err != nil {
		t.Fatalf("ManifestWorkCreated events of %s account for %d of %d clusters (%v): %q", app.Name, accounted, clusters, err, notes)
	}
	for _, n := range notes {
		if len(n) > 1024 || !strings.HasPrefix(n, prefix) {
			t.Errorf("event note of %d bytes: want at most 1,024, starting %q: %q", len(n), prefix, n)
		}
	}
}
