package agent_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/internal/testing/benchgoal"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/pkg/agent/process"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// BenchmarkAgent200WorksOf5ConfigMaps measures the agent end to end on a real hub and spoke: 200
// ManifestWorks of 5 ConfigMaps each are created on the hub at once, and the clock stops when every
// work reports Applied. It reports applied objects per second, and as a ratio to a plain client's rate
// on the same spoke in the same run (the mean of one run before the agent's and one after: the goal is
// 0.5 or more), the writes the agent sent per applied object (spoke) and per work (hub), and the
// processor time the measured phase cost per object — hub, spoke and this process — beside the plain
// client's. Run with -benchtime=1x.
func BenchmarkAgent200WorksOf5ConfigMaps(b *testing.B) {
	const works, perWork = 200, 5
	for b.Loop() {
		b.StopTimer()
		f := startAgent(b, func(c *agentSetup) { c.Workers = process.NewOptions().Workers })
		if _, err := f.kube.CoreV1().Namespaces().Create(b.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.cluster}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		ws := configMapWorks(f, works, perWork)
		// The first requests for a custom resource kind on a fresh API server are slow while it builds
		// what serves the kind (a few seconds for ManifestWork): one work applied first keeps that out of
		// what is measured, as on any hub and spoke that have been running.
		warm := f.create(f.work("warm-up-"+f.cluster, `{apiVersion: v1, kind: ConfigMap, metadata: {name: warm-up, namespace: "{{ns}}"}}`))
		f.waitWork(warm.Name, "applied", allApplied)
		e := testEnv(b)
		plainBefore, plainCPUBefore := plainClientRun(b, e)
		hub0, spoke0, reads0 := f.hubWrites.Load(), f.spokeWrites.Load(), f.spokeReads.Load()
		hubCPU0, _ := e.Hub.CPUTime()
		spokeCPU0, _ := e.Spoke("spoke").CPUTime()
		agentCPU0 := processCPU()
		profiled := profileAPIServers(b, e)
		b.StartTimer()
		start := time.Now()
		createWorks(b, f, ws)
		err := waitAllApplied(b.Context(), f, works+1)
		elapsed := time.Since(start)
		b.StopTimer()
		if err != nil {
			b.Fatalf("works not applied: %v", err)
		}
		hubCPU, _ := e.Hub.CPUTime()
		spokeCPU, _ := e.Spoke("spoke").CPUTime()
		agentCPU := processCPU() - agentCPU0
		plainAfter, plainCPUAfter := plainClientRun(b, e)
		objects := float64(works * (perWork + 0))
		rate, plain := objects/elapsed.Seconds(), (plainBefore+plainAfter)/2
		b.ReportMetric(rate, "objects/s")
		b.ReportMetric(plain, "plain-client-objects/s")
		benchgoal.Report(b, rate/plain, "ratio-to-plain-client", benchgoal.AtLeast(0.5))
		benchgoal.Report(b, float64(f.spokeWrites.Load()-spoke0)/objects, "spoke-writes/object", benchgoal.AtMost(1.05))
		benchgoal.Report(b, float64(f.hubWrites.Load()-hub0)/works, "hub-writes/work", benchgoal.AtMost(1.2))
		b.ReportMetric(float64(f.spokeReads.Load()-reads0)/objects, "spoke-reads/object")
		// Where the processor time of the measured phase went, and the whole machine's per object beside
		// the plain client's: on a machine of few cores the API servers' share bounds the rate.
		b.ReportMetric((hubCPU["kube-apiserver"] - hubCPU0["kube-apiserver"]).Seconds(), "hub-apiserver-cpu-s")
		b.ReportMetric((hubCPU["etcd"] - hubCPU0["etcd"]).Seconds(), "hub-etcd-cpu-s")
		for _, p := range []string{"kube-apiserver", "etcd", "kube-controller-manager"} {
			b.ReportMetric((spokeCPU[p] - spokeCPU0[p]).Seconds(), "spoke-"+strings.TrimPrefix(p, "kube-")+"-cpu-s")
		}
		b.ReportMetric(agentCPU.Seconds(), "agent+test-cpu-s")
		var hubTotal, spokeTotal time.Duration
		for p, d := range hubCPU {
			hubTotal += d - hubCPU0[p]
		}
		for p, d := range spokeCPU {
			spokeTotal += d - spokeCPU0[p]
		}
		total := hubTotal + spokeTotal + agentCPU
		b.ReportMetric(total.Seconds()*1000/objects, "cpu-ms/object")
		// The hub's share is what a plain client never pays (the works' create, finalizer and status
		// writes): with hub and spoke on the same cores, plain-client-cpu-ms/object over it bounds the
		// ratio even if the spoke's side and the agent cost nothing.
		b.ReportMetric(hubTotal.Seconds()*1000/objects, "hub-cpu-ms/object")
		b.ReportMetric(spokeTotal.Seconds()*1000/objects, "spoke-cpu-ms/object")
		b.ReportMetric((plainCPUBefore+plainCPUAfter).Seconds()*1000/2/plainObjects, "plain-client-cpu-ms/object")
		b.ReportMetric(total.Seconds()/elapsed.Seconds(), "busy-cores")
		profiled()
		f.stop()
		b.StartTimer()
	}
}

// BenchmarkAgentIdle1000Objects measures what an agent at its defaults costs its spoke when nothing
// changes: 200 ManifestWorks of 5 ConfigMaps each are applied, and after one status sync interval for
// the last writes to settle, the agent's requests to the spoke (watches aside: they stay open) are
// counted over a minute. Run with -benchtime=1x.
func BenchmarkAgentIdle1000Objects(b *testing.B) {
	const works, perWork = 200, 5
	for b.Loop() {
		b.StopTimer()
		defaults := process.NewOptions()
		f := startAgent(b, func(c *agentSetup) { c.Workers, c.StatusSyncInterval = defaults.Workers, defaults.StatusSyncInterval })
		if _, err := f.kube.CoreV1().Namespaces().Create(b.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.cluster}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		createWorks(b, f, configMapWorks(f, works, perWork))
		if err := waitAllApplied(b.Context(), f, works); err != nil {
			b.Fatalf("works not applied: %v", err)
		}
		settle := time.NewTimer(defaults.StatusSyncInterval + 2*time.Second)
		select {
		case <-settle.C:
		case <-b.Context().Done():
			b.Fatal(b.Context().Err())
		}
		reads0, writes0, hubWrites0 := f.spokeReads.Load(), f.spokeWrites.Load(), f.hubWrites.Load()
		window := time.NewTimer(time.Minute)
		select {
		case <-window.C:
		case <-b.Context().Done():
			b.Fatal(b.Context().Err())
		}
		reads, writes := f.spokeReads.Load()-reads0, f.spokeWrites.Load()-writes0
		benchgoal.Report(b, float64(reads+writes), "idle-spoke-requests/min", benchgoal.AtMost(10))
		benchgoal.Report(b, float64(writes), "idle-spoke-writes/min", benchgoal.AtMost(0))
		benchgoal.Report(b, float64(f.hubWrites.Load()-hubWrites0), "idle-hub-writes/min", benchgoal.AtMost(0))
		f.stop()
		b.StartTimer()
	}
}

// configMapWorks builds n ManifestWorks of perWork ConfigMaps each, in the cluster's namespace on the
// spoke.
func configMapWorks(f *agentFixture, n, perWork int) []*workv1.ManifestWork {
	ws := make([]*workv1.ManifestWork, n)
	for i := range ws {
		var manifests []string
		for j := range perWork {
			manifests = append(manifests, fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: cm-%03d-%d, namespace: "{{ns}}"}, data: {k: "v"}}`, i, j))
		}
		// Named after the cluster: the spoke's AppliedManifestWork of a work is named after the hub and the
		// work alone, so two agents of one hub on this shared spoke must not both have a work "w-000".
		ws[i] = f.work(fmt.Sprintf("%s-w-%03d", f.cluster, i), manifests...)
	}
	return ws
}

// createWorks creates ws on the hub, 16 at a time.
func createWorks(b *testing.B, f *agentFixture, ws []*workv1.ManifestWork) {
	var g errgroup.Group
	g.SetLimit(16)
	for _, w := range ws {
		g.Go(func() error {
			_, err := f.hub.WorkV1().ManifestWorks(f.cluster).Create(context.Background(), w, metav1.CreateOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}

// profileAPIServers, when FERRY_BENCH_PROFILE_DIR is set, records a CPU profile of the hub's and the
// spoke's kube-apiserver over the next few seconds into that directory (hub-apiserver.pprof,
// spoke-apiserver.pprof; read with go tool pprof). It returns a function that waits for them.
func profileAPIServers(b *testing.B, e *localcluster.Environment) (wait func()) {
	dir := os.Getenv("FERRY_BENCH_PROFILE_DIR")
	if dir == "" {
		return func() {}
	}
	var g errgroup.Group
	for name, cfg := range map[string]*rest.Config{"hub": e.Hub.Config, "spoke": e.Spoke("spoke").Config} {
		g.Go(func() error {
			kube, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			data, err := kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", "4").DoRaw(context.Background())
			if err != nil {
				return fmt.Errorf("profile the %s's kube-apiserver: %w", name, err)
			}
			return os.WriteFile(filepath.Join(dir, name+"-apiserver.pprof"), data, 0o644)
		})
	}
	return func() {
		if err := g.Wait(); err != nil {
			b.Error(err)
		}
	}
}

// processCPU is the processor time this test process (agent and test together) has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitAllApplied watches the cluster namespace until n works report Applied (a watch, not polling:
// listing 200 works over and over would load the hub more than the agent does).
func waitAllApplied(ctx context.Context, f *agentFixture, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	applied := map[string]bool{}
	for ctx.Err() == nil {
		list, err := f.hub.WorkV1().ManifestWorks(f.cluster).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for i := range list.Items {
			if allApplied(&list.Items[i]) {
				applied[list.Items[i].Name] = true
			}
		}
		if len(applied) == n {
			return nil
		}
		w, err := f.hub.WorkV1().ManifestWorks(f.cluster).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			return err
		}
		for ev := range w.ResultChan() {
			if work, ok := ev.Object.(*workv1.ManifestWork); ok && allApplied(work) {
				applied[work.Name] = true
				if len(applied) == n {
					w.Stop()
					return nil
				}
			}
		}
		w.Stop() // closed by the server: list again and go on
	}
	return fmt.Errorf("%d of %d works applied: %w", len(applied), n, ctx.Err())
}

// BenchmarkPlainClient1000ConfigMaps is the yardstick for the agent benchmark: the same 1000 ConfigMaps
// created on the same spoke by a plain client, 32 at a time, with no rate limit and no agent.
func BenchmarkPlainClient1000ConfigMaps(b *testing.B) {
	e := testEnv(b)
	for b.Loop() {
		b.StopTimer()
		cpu0, _ := e.Spoke("spoke").CPUTime()
		b.StartTimer()
		rate, _ := plainClientRun(b, e)
		b.ReportMetric(rate, "objects/s")
		b.StopTimer()
		cpu, _ := e.Spoke("spoke").CPUTime()
		b.ReportMetric((cpu["kube-apiserver"] - cpu0["kube-apiserver"]).Seconds(), "spoke-apiserver-cpu-s")
		b.StartTimer()
	}
}

// plainObjects is how many ConfigMaps a plain client run creates.
const plainObjects = 1000

// plainClientRun creates plainObjects ConfigMaps in a new namespace of the spoke with a plain client, 32
// at a time and no rate limit, and returns the objects created per second — the yardstick of the agent's
// rate, measured in the same run because the machines it runs on are shared and noisy — and the
// processor time the spoke's processes and this one used meanwhile.
func plainClientRun(b *testing.B, e *localcluster.Environment) (rate float64, cpu time.Duration) {
	spoke := e.Spoke("spoke")
	spokeCPU0, _ := spoke.CPUTime()
	self0 := processCPU()
	rate = plainClientCreate(b, e)
	spokeCPU, _ := spoke.CPUTime()
	cpu = processCPU() - self0
	for p, d := range spokeCPU {
		cpu += d - spokeCPU0[p]
	}
	return rate, cpu
}

func plainClientCreate(b *testing.B, e *localcluster.Environment) float64 {
	cfg := rest.CopyConfig(e.Spoke("spoke").Config)
	cfg.QPS, cfg.Burst = -1, 0
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ns := "plain-" + strings.ToLower(rand.String(6))
	if _, err := kube.CoreV1().Namespaces().Create(b.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	var g errgroup.Group
	g.SetLimit(32)
	for i := range plainObjects {
		g.Go(func() error {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i)}, Data: map[string]string{"k": "v"}}
			_, err := kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	return plainObjects / time.Since(start).Seconds()
}

// BenchmarkAgentCreateToApplied measures the latency a user sees: from creating a ManifestWork of one
// ConfigMap on the hub to its status saying Applied, observed through a watch.
func BenchmarkAgentCreateToApplied(b *testing.B) {
	f := startAgent(b)
	if _, err := f.kube.CoreV1().Namespaces().Create(b.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.cluster}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	// As in BenchmarkAgent200WorksOf5ConfigMaps, a fresh API server's first use of a kind stays out.
	warm := f.create(f.work("warm-up-"+f.cluster, `{apiVersion: v1, kind: ConfigMap, metadata: {name: warm-up, namespace: "{{ns}}"}}`))
	f.waitWork(warm.Name, "applied", allApplied)
	i := 0
	for b.Loop() {
		i++
		name := fmt.Sprintf("lat-%s-%d", f.cluster, i) // unique on the shared spoke
		w := f.work(name, fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: "{{ns}}"}}`, name))
		ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
		watch, err := f.hub.WorkV1().ManifestWorks(f.cluster).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.hub.WorkV1().ManifestWorks(f.cluster).Create(b.Context(), w, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		applied := false
		for ev := range watch.ResultChan() {
			if got, ok := ev.Object.(*workv1.ManifestWork); ok && allApplied(got) {
				applied = true
				break
			}
		}
		watch.Stop()
		cancel()
		if !applied {
			b.Fatalf("work %s not applied within a minute", name)
		}
	}
}

// BenchmarkSpokeChangeToHub measures how soon a change made on the spoke shows on the hub: a ConfigMap
// the work reads (ReadOnly, with a JSONPath feedback rule on its data) is changed on the spoke, and the
// clock stops when the work's status on the hub, observed through a watch, reports the new value. The
// agent's resync is left at its default; the watch on applied objects is what brings the change.
func BenchmarkSpokeChangeToHub(b *testing.B) {
	f := startAgent(b, func(c *agentSetup) { c.StatusSyncInterval = process.DefaultStatusSyncInterval })
	cm := observedConfigMap(b, f, "observed", "0")
	name := "observe-" + f.cluster
	w := f.work(name, `{apiVersion: v1, kind: ConfigMap, metadata: {name: observed, namespace: "{{ns}}"}}`)
	w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{
		ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Name: "observed", Namespace: f.cluster},
		UpdateStrategy:     &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly},
		FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "value", Path: ".data.value"}}}},
	}}
	f.create(w)
	f.waitWork(name, "reporting the first value", func(w *workv1.ManifestWork) bool { return feedbackValue(w, 0, "value") == "0" })
	i := 0
	for b.Loop() {
		i++
		want := strconv.Itoa(i)
		ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
		watch, err := f.hub.WorkV1().ManifestWorks(f.cluster).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
		if err != nil {
			b.Fatal(err)
		}
		cm.Data["value"] = want
		if cm, err = f.kube.CoreV1().ConfigMaps(f.cluster).Update(b.Context(), cm, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		seen := false
		for ev := range watch.ResultChan() {
			if got, ok := ev.Object.(*workv1.ManifestWork); ok && feedbackValue(got, 0, "value") == want {
				seen = true
				break
			}
		}
		watch.Stop()
		cancel()
		if !seen {
			b.Fatalf("value %s not on the hub within a minute", want)
		}
	}
}

// How soon a change on the spoke reaches the hub as a change of health: a conditionRule on a ConfigMap
// (Ready when data.value is "on") flipped by writes on the spoke, the time from the write to the
// hub's watch showing the new condition. The agent's watch of what it applied carries it; there is no
// polling interval in the path (the status resync is left at its default, 10s). Reports the median
// and the 99th percentile.
func BenchmarkSpokeChangeToHubHealth(b *testing.B) {
	f := startAgent(b, func(c *agentSetup) { c.StatusSyncInterval = process.DefaultStatusSyncInterval })
	cm := observedConfigMap(b, f, "switch", "off")
	name := "health-" + f.cluster
	w := f.work(name, `{apiVersion: v1, kind: ConfigMap, metadata: {name: switch, namespace: "{{ns}}"}}`)
	w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{
		ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Name: "switch", Namespace: f.cluster},
		UpdateStrategy:     &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly},
		ConditionRules: []workv1.ConditionRule{{Condition: "Ready", Type: workv1.CelConditionExpressionsType,
			CelExpressions: []string{"object.data.value == 'on'"}}},
	}}
	f.create(w)
	ready := func(w *workv1.ManifestWork) metav1.ConditionStatus {
		if c := manifestCondition(w, 0, "Ready"); c != nil {
			return c.Status
		}
		return ""
	}
	f.waitWork(name, "Ready False first", func(w *workv1.ManifestWork) bool { return ready(w) == metav1.ConditionFalse })
	var took []time.Duration
	on := false
	for b.Loop() {
		on = !on
		value, want := "off", metav1.ConditionFalse
		if on {
			value, want = "on", metav1.ConditionTrue
		}
		ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
		watch, err := f.hub.WorkV1().ManifestWorks(f.cluster).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
		if err != nil {
			b.Fatal(err)
		}
		cm.Data["value"] = value
		start := time.Now()
		if cm, err = f.kube.CoreV1().ConfigMaps(f.cluster).Update(b.Context(), cm, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		seen := false
		for ev := range watch.ResultChan() {
			if got, ok := ev.Object.(*workv1.ManifestWork); ok && ready(got) == want {
				seen = true
				break
			}
		}
		took = append(took, time.Since(start))
		watch.Stop()
		cancel()
		if !seen {
			b.Fatalf("Ready %s not on the hub within a minute", want)
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-p50")
	b.ReportMetric(float64(took[(len(took)*99)/100].Microseconds())/1000, "ms-p99")
}

// observedConfigMap makes, on the spoke, the agent's cluster namespace and in it a ConfigMap with
// data.value, for a work to observe.
func observedConfigMap(b *testing.B, f *agentFixture, name, value string) *corev1.ConfigMap {
	b.Helper()
	if _, err := f.kube.CoreV1().Namespaces().Create(b.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.cluster}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	cm, err := f.kube.CoreV1().ConfigMaps(f.cluster).Create(b.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"value": value}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return cm
}

// BenchmarkDriftRevert measures how soon the agent puts back an edit made on the spoke: a ConfigMap the
// work applies (Update) is changed under kubectl's manager name for edits, as `kubectl edit` does, and
// the clock stops when the spoke's watch shows it back as the work has it. Reports the median and the
// 90th percentile of the edits (-benchtime=20x: the 20 edits), how soon the agent sent its write
// (apart from the API server's watch), and its spoke requests per edit. The agent's resync is an hour:
// the watch of what it applied is what brings the edit. Each edit waits for the report of the one
// before on the hub (its Drifted count), as edits a person makes are seconds apart: an edit made while
// the agent writes the report of the previous one waits for that write, a hub status patch, before its
// own apply.
func BenchmarkDriftRevert(b *testing.B) {
	// When the agent sent its write of the ConfigMap: how soon it answered the edit, apart from how
	// soon the spoke's API server told the watch.
	var putBack atomic.Int64
	f := startAgent(b, withResync(time.Hour), func(c *agentSetup) {
		c.SpokeEvents = true // as ferry-agent ships: the revert records an Event too
		c.Spoke.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if r.Method != http.MethodGet && strings.HasSuffix(r.URL.Path, "/configmaps/a") {
					putBack.Store(time.Now().UnixNano())
				}
				return rt.RoundTrip(r)
			})
		})
	})
	w := f.create(f.work("revert-"+f.cluster, namespaceManifest, configMapA))
	f.waitWork(w.Name, "applied", allApplied)
	var took, answered []time.Duration
	reads0, writes0 := f.spokeReads.Load(), f.spokeWrites.Load()
	for edits := 1; b.Loop(); edits++ {
		cm, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(b.Context(), "a", metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		want := cm.Data["k"]
		ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
		watch, err := f.kube.CoreV1().ConfigMaps(f.cluster).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=a", ResourceVersion: cm.ResourceVersion})
		if err != nil {
			b.Fatal(err)
		}
		cm.Data["k"] = "edited"
		start := time.Now()
		if _, err := f.kube.CoreV1().ConfigMaps(f.cluster).Update(b.Context(), cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
			b.Fatal(err)
		}
		back := false
		for ev := range watch.ResultChan() {
			if got, ok := ev.Object.(*corev1.ConfigMap); ok && got.Data["k"] == want {
				back = true
				break
			}
		}
		took = append(took, time.Since(start))
		answered = append(answered, time.Unix(0, putBack.Load()).Sub(start))
		watch.Stop()
		cancel()
		if !back {
			b.Fatal("the edit was not put back within a minute")
		}
		f.waitWork(w.Name, fmt.Sprintf("edit %d reported", edits), func(w *workv1.ManifestWork) bool {
			c := manifestCondition(w, 1, workreport.ConditionDrifted)
			d, ok := workreport.ReadDrift(c)
			return ok && c.ObservedGeneration == w.Generation && d.Count == edits
		})
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-p50")
	b.ReportMetric(float64(took[(len(took)*9)/10].Microseconds())/1000, "ms-p90")
	slices.Sort(answered)
	b.ReportMetric(float64(answered[len(answered)/2].Microseconds())/1000, "ms-agent-write-p50")
	b.ReportMetric(float64(f.spokeReads.Load()-reads0)/float64(len(took)), "spoke-reads/edit")
	b.ReportMetric(float64(f.spokeWrites.Load()-writes0)/float64(len(took)), "spoke-writes/edit")
}
