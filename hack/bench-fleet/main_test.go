package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/ferry-mc/ferry/internal/testing/childproc"
	"github.com/ferry-mc/ferry/internal/testing/fleetsim"
	"github.com/ferry-mc/ferry/internal/testing/gobuild"
	"github.com/ferry-mc/ferry/pkg/hub"
)

func TestMain(m *testing.M) {
	runAsBurner() // --cpu-load starts this test binary as its busy loop
	os.Exit(m.Run())
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// The whole benchmark at a small scale, with ferry-hub built from this checkout: every phase runs,
// and the figures a person reads are the ones that happened — every work written, every cluster of
// every AppConfig reported, each lag write seen, exactly app-0's works rewritten by the Component
// change, ferry-hub's memory and writes sampled — and the rollout (stages of 1 and 4 of the 40
// clusters, then the rest; 3 of the second stage failing) halts and rolls back with no cluster
// changed out of its turn. The AppConfigs are each in a namespace of their own and the clusters spread
// over 4 exclusive sets, all bound in each: the mode with the most to keep apart.
func TestBenchmarkRunsEveryPhase(t *testing.T) {
	dir := t.TempDir()
	build := gobuild.Command(t.Context(), repoRoot(), filepath.Join(dir, "ferry-hub"), "./cmd/hub")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build ferry-hub: %v\n%s", err, out)
	}
	o := &options{
		clusters: 40, appConfigs: 2, statusRate: 50, initialRate: 200, lagWrites: 6, agentConcurrency: 8, registerParallel: 8, rollout: true,
		clusterSets: 4, appConfigNamespaces: true, cpuLoad: 0.25,
		hubBinary: filepath.Join(dir, "ferry-hub"), hubArgs: []string{"--workers=4"}, hubShards: 1,
		deployDir: filepath.Join(repoRoot(), "deploy"), tempDir: dir,
		// In a directory that does not exist yet, as .local/ on a clean clone.
		jsonPath: filepath.Join(dir, "out", "result.json"), hubLog: filepath.Join(dir, "out", "hub.log"),
		worksTimeout: 2 * time.Minute, timeout: 2 * time.Minute, sampleInterval: 100 * time.Millisecond,
	}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	if err := run(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(o.jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.Error != "" {
		t.Fatalf("the run reports an error: %s", r.Error)
	}
	if c := r.Config; c.ClusterSets != 4 || !c.AppConfigNamespaces || !strings.Contains(c.Tenancy, "4 ManagedClusterSets") {
		t.Errorf("config %+v; want the run labelled with its 4 sets and namespaces of their own", c)
	}
	if r.Works == nil || r.Works.Count != 80 || r.Works.Seconds <= 0 {
		t.Errorf("works %+v; want 80 written in a measured time", r.Works)
	}
	if r.Initial == nil || r.Initial.Writes != 80 || r.Initial.SummarySeconds <= 0 {
		t.Errorf("first status %+v; want 80 writes and a time until every summary showed them", r.Initial)
	}
	for name, l := range map[string]*LagResult{"degrade": r.Degrade, "heal": r.Heal} {
		if l == nil || l.Writes != 6 || l.P99Seconds < l.MedianSeconds || l.MaxSeconds < l.P99Seconds {
			t.Errorf("%s %+v; want 6 writes with median <= p99 <= max", name, l)
		}
	}
	if c := r.Change; c == nil || c.Expected != 40 || c.OfApp != 40 || c.Others != 0 || c.HubWrites < 40 {
		t.Errorf("component change %+v; want exactly app-0's 40 works rewritten, at least a write each", c)
	}
	if x := r.RolloutSpec; x == nil || x.Seconds <= 0 || x.HubWrites <= 0 {
		t.Errorf("spec.rollout set %+v; want the time until every rollout showed Complete, and the hub's writes", x)
	}
	if x := r.Rollout; x == nil {
		t.Error("no rollout figures")
	} else {
		if x.OutOfStage != 0 || x.HaltsLost != 0 {
			t.Errorf("%d works took the new revision out of their stage's turn, %d AppConfigs lost their halt; want none:\n%s",
				x.OutOfStage, x.HaltsLost, strings.Join(x.Violations, "\n"))
		}
		if x.Halted != 2 || x.RolledBack != 2 {
			t.Errorf("%d AppConfigs halted, %d RolledBack; want both, both", x.Halted, x.RolledBack)
		}
		if !slices.Equal(x.StageClusters, []int{1, 4, 35}) || len(x.Degraded) != 3 || x.Expected != 10 || x.Changed < 2*4 || x.Changed > 10 {
			t.Errorf("stages %v, degraded %v, %d works changed of %d expected; want stages 1, 4, 35, 3 degraded, at least the first stage and "+
				"the degraded clusters changed in both AppConfigs, none beyond the second stage", x.StageClusters, x.Degraded, x.Changed, x.Expected)
		}
		// A halt may be seen before the first Degraded report's write is acknowledged (a loaded machine
		// answers the hub's watch before the writer): 0 is a measured time, as Halted says.
		if x.BatchReports < 2*3 || x.HaltMedianSeconds < 0 || x.HaltP99Seconds < x.HaltMedianSeconds || x.HaltMaxSeconds < x.HaltP99Seconds ||
			x.RollbackMedianSeconds <= 0 || x.RollbackMaxSeconds < x.RollbackMedianSeconds || x.RolledBackMaxSeconds <= 0 {
			t.Errorf("rollout times %+v; want the halt and the rollback measured in every AppConfig", x)
		}
		if x.Rewrites < 2*x.Changed || x.HubWrites < float64(x.Rewrites) || x.HubWritesPerCluster <= 0 || x.Seconds <= 0 {
			t.Errorf("rollout writes %+v; want every changed work rewritten there and back, each a hub write at least", x)
		}
	}
	if r.Largest == nil || r.Largest.Bytes < 500 {
		t.Errorf("largest AppConfig %+v; want the size of a real one", r.Largest)
	}
	if hub := processNamed(r.Processes, hubName); hub == nil || hub.PeakRSS < 10<<20 || hub.CPUSeconds <= 0 {
		t.Errorf("ferry-hub usage %+v; want its memory and CPU time sampled", hub)
	}
	var ran float64
	for _, p := range r.Phases {
		ran += p.Seconds
	}
	// A quarter of a core over the run; on a machine shared with other tests it gets less than its
	// share, but not less than a tenth.
	if load := processNamed(r.Processes, cpuLoadName); load == nil || r.Config.CPULoadCores != 0.25 || load.CPUSeconds < 0.1*ran {
		t.Errorf("--cpu-load 0.25: config %v cores, its process %+v over %s; want it sampled busy through the run", r.Config.CPULoadCores, load, seconds(ran))
	}
	if len(r.Targets) != 10 {
		t.Errorf("targets %+v; want the issue's five judged and the rollout's five", r.Targets)
	}
	for _, x := range r.Targets {
		if !x.Met {
			t.Logf("target not met: %s: %s", x.Target, x.Got)
		}
	}
	log, err := os.ReadFile(o.hubLog)
	if err != nil || !strings.Contains(string(log), "ferry-hub") {
		t.Errorf("ferry-hub's log %s: %v", o.hubLog, err)
	}
	if entries, _ := filepath.Glob(filepath.Join(dir, "ferry-localcluster-*")); len(entries) > 0 {
		t.Errorf("the hub's data is left behind: %v", entries)
	}
}

// A ferry-hub that exits on its own is started again, as the kubelet would, and recorded; one that
// keeps exiting ends the run with its last words.
func TestSupervisionRestartsThenGivesUp(t *testing.T) {
	dir := t.TempDir()
	crashing := exec.Command("sh", "-c", "echo starting; sleep 0.2; echo lost my lease; exit 3")
	p, err := childproc.Start(crashing, "ferry-hub (a stand-in)", filepath.Join(dir, "hub.log"))
	if err != nil {
		t.Fatal(err)
	}
	h := &hubProcess{Process: p, sampled: hubName, metrics: "127.0.0.1:1"}
	b := &bench{o: &options{maxHubRestarts: 1}, start: time.Now(), res: &Result{}, sampler: fleetsim.NewSampler(time.Hour),
		restartBackoff: 10 * time.Millisecond, phaseName: "write works"}
	b.sampler.Watch(hubName, p.PID())
	firstPID := p.PID()
	ctx, fail := context.WithCancelCause(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); b.supervise(ctx, h, fail) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("supervision did not give up on a process that keeps exiting")
	}
	cause := context.Cause(ctx)
	if cause == nil || !strings.Contains(cause.Error(), "exited 2 times") || !strings.Contains(cause.Error(), "lost my lease") {
		t.Errorf("cause %v; want one counting 2 exits and quoting the log", cause)
	}
	if len(b.res.HubRestarts) != 2 || b.res.HubRestarts[0].Phase != "write works" || b.res.HubRestarts[0].Exit != "exit status 3" {
		t.Errorf("restarts %+v; want 2, in phase write works, exit status 3", b.res.HubRestarts)
	}
	if p.Runs() != 2 || p.PID() == firstPID {
		t.Errorf("%d runs, pid %d (first %d); want it started once more", p.Runs(), p.PID(), firstPID)
	}
}

// A wait that does not end in time says what it waited for and how far it got.
func TestWaitNamesWhatAndHowFar(t *testing.T) {
	b := &bench{o: &options{}, start: time.Now()}
	err := b.waitFor(t.Context(), "the moon", 200*time.Millisecond, func() string { return "3 of 4 craters" },
		func(context.Context) (bool, error) { return false, nil })
	if err == nil || !strings.Contains(err.Error(), "the moon") || !strings.Contains(err.Error(), "3 of 4 craters") {
		t.Errorf("error %v; want one naming the moon and 3 of 4 craters", err)
	}
}

// A work counts as rewritten when its generation moved; it is the changed AppConfig's or another's
// by the hub's label; the time is when the changed AppConfig's last was written, not when a watch
// that fell behind saw it.
func TestRewrites(t *testing.T) {
	t0 := time.Now()
	work := func(cluster, app string, gen int64, written time.Time) *fleetsim.Work {
		w := &fleetsim.Work{Written: written, Seen: written.Add(2 * time.Minute)}
		w.Namespace, w.Name, w.Generation = cluster, namespace+"."+app, gen
		w.Labels = map[string]string{hub.LabelAppConfigName: app}
		return w
	}
	works := []*fleetsim.Work{
		work("c1", "app-0", 2, t0.Add(time.Second)),
		work("c2", "app-0", 2, t0.Add(3*time.Second)),
		work("c3", "app-0", 1, t0.Add(9*time.Second)), // not yet
		work("c1", "app-1", 5, t0.Add(5*time.Second)), // should not have moved
		work("c2", "app-1", 4, t0.Add(7*time.Second)),
	}
	before := generations{}
	for _, w := range works {
		before[keyOf(w)] = 1
	}
	before[types.NamespacedName{Namespace: "c2", Name: namespace + ".app-1"}] = 4
	each := func(f func(*fleetsim.Work)) {
		for _, w := range works {
			f(w)
		}
	}
	ofApp, others, last := rewrites(each, before, func(w *fleetsim.Work) bool { return w.Labels[hub.LabelAppConfigName] == "app-0" })
	if ofApp != 2 || others != 1 || !last.Equal(t0.Add(3*time.Second)) {
		t.Errorf("rewrites = %d of app-0, %d others, last at +%v; want 2, 1, +3s", ofApp, others, last.Sub(t0))
	}
}

func TestHubArgs(t *testing.T) {
	got, err := hubArgOverrides([]string{"--workers=20", "--leader-elect", "--v=2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Flag != "workers" || got[0].Value != "20" || got[1].Value != "true" || !got[2].Add {
		t.Errorf("overrides %+v", got)
	}
	for _, bad := range []string{"workers=20", "-w", "--=x"} {
		if _, err := hubArgOverrides([]string{bad}); err == nil {
			t.Errorf("--hub-arg %q accepted", bad)
		}
	}
}

// Without flags every AppConfig is in fleet-bench with the global set bound there; with
// --appconfig-namespaces each is in a namespace of its own, and with --cluster-sets N the global set
// gives way to N exclusive ones, every one bound in every AppConfig namespace.
func TestTenancyModes(t *testing.T) {
	for _, tc := range []struct {
		name          string
		o             options
		namespaces    []string
		watched       string
		sets          []string
		setType       clusterv1beta2.SelectorType
		tenancy, mode string
	}{
		{name: "default", o: options{clusters: 200, appConfigs: 3},
			namespaces: []string{"fleet-bench"}, watched: "fleet-bench", sets: []string{"global"}, setType: clusterv1beta2.LabelSelector,
			tenancy: "every AppConfig in namespace fleet-bench; ManagedClusterSet global (LabelSelector {}: every cluster) bound there: 1 binding",
			mode:    "global set, one namespace"},
		{name: "namespaces", o: options{clusters: 200, appConfigs: 3, appConfigNamespaces: true},
			namespaces: []string{"fleet-bench-0", "fleet-bench-1", "fleet-bench-2"}, watched: "", sets: []string{"global"}, setType: clusterv1beta2.LabelSelector,
			tenancy: "each AppConfig with its Component in a namespace of its own (fleet-bench-<i>); ManagedClusterSet global (LabelSelector {}: every cluster) bound in each: 3 bindings",
			mode:    "global set, a namespace per AppConfig"},
		{name: "sets and namespaces", o: options{clusters: 200, appConfigs: 3, clusterSets: 3, appConfigNamespaces: true},
			namespaces: []string{"fleet-bench-0", "fleet-bench-1", "fleet-bench-2"}, watched: "",
			sets: []string{"fleet-set-000", "fleet-set-001", "fleet-set-002"}, setType: clusterv1beta2.ExclusiveClusterSetLabel,
			tenancy: "each AppConfig with its Component in a namespace of its own (fleet-bench-<i>); 3 ManagedClusterSets (ExclusiveClusterSetLabel, 66-67 clusters each, round-robin) bound in each: 9 bindings",
			mode:    "3 exclusive sets, a namespace per AppConfig"},
		{name: "sets in one namespace", o: options{clusters: 200, appConfigs: 3, clusterSets: 10},
			namespaces: []string{"fleet-bench"}, watched: "fleet-bench", sets: fleetsim.ClusterSetNames("", 10), setType: clusterv1beta2.ExclusiveClusterSetLabel,
			tenancy: "every AppConfig in namespace fleet-bench; 10 ManagedClusterSets (ExclusiveClusterSetLabel, 20 clusters each, round-robin) bound there: 10 bindings",
			mode:    "10 exclusive sets, one namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			if got := o.appNamespaces(); !slices.Equal(got, tc.namespaces) {
				t.Errorf("namespaces %v, want %v", got, tc.namespaces)
			}
			for i := range o.appConfigs {
				if ns := o.appNamespace(i); !slices.Contains(tc.namespaces, ns) || (o.appConfigNamespaces && ns != tc.namespaces[i]) {
					t.Errorf("AppConfig %d in namespace %s; want it among %v, its own with --appconfig-namespaces", i, ns, tc.namespaces)
				}
				if app, c := appConfig(o.appNamespace(i), i), component(o.appNamespace(i), i, image); app.Namespace != c.Namespace || app.Namespace != o.appNamespace(i) {
					t.Errorf("AppConfig %d in %s, its Component in %s; want both in %s", i, app.Namespace, c.Namespace, o.appNamespace(i))
				}
			}
			if got := o.watchedNamespace(); got != tc.watched {
				t.Errorf("watched namespace %q, want %q", got, tc.watched)
			}
			var names []string
			for _, s := range o.sets() {
				names = append(names, s.Name)
				if sel := s.Spec.ClusterSelector; sel.SelectorType != tc.setType ||
					(tc.setType == clusterv1beta2.LabelSelector && (sel.LabelSelector == nil || len(sel.LabelSelector.MatchLabels)+len(sel.LabelSelector.MatchExpressions) > 0)) {
					t.Errorf("set %s selects by %+v; want %s (an empty label selector for global)", s.Name, sel, tc.setType)
				}
			}
			if !slices.Equal(names, tc.sets) {
				t.Errorf("sets %v, want %v", names, tc.sets)
			}
			if o.clusterSets > 0 && !slices.Equal(o.setNames(), tc.sets) || o.clusterSets == 0 && o.setNames() != nil {
				t.Errorf("the clusters are spread over %v; want %v with --cluster-sets, none without", o.setNames(), tc.sets)
			}
			if got := o.tenancy(); got != tc.tenancy {
				t.Errorf("tenancy\n%s\nwant\n%s", got, tc.tenancy)
			}
			r := newResult(&o)
			if got := r.Config.tenancyMode(); got != tc.mode || r.Config.ClusterSets != o.clusterSets || r.Config.AppConfigNamespaces != o.appConfigNamespaces {
				t.Errorf("result config %+v, mode %q; want the flags and mode %q", r.Config, got, tc.mode)
			}
			var table strings.Builder
			if err := r.writeTable(&table); err != nil || !strings.Contains(table.String(), "\ntenancy: "+tc.tenancy+"\n") {
				t.Errorf("the table's header does not say the tenancy (%v):\n%s", err, table.String())
			}
		})
	}
	if mode := (Config{Clusters: 100}).tenancyMode(); mode != "" {
		t.Errorf("a run from before the sets has mode %q, want none", mode)
	}
}

// --cluster-sets leaves no set empty and takes no negative count.
func TestClusterSetsValidated(t *testing.T) {
	valid := func(sets int) error {
		o := &options{clusters: 10, appConfigs: 2, statusRate: 1, initialRate: 1, lagWrites: 1, hubShards: 1, clusterSets: sets}
		return o.validate()
	}
	for _, ok := range []int{0, 1, 10} {
		if err := valid(ok); err != nil {
			t.Errorf("--cluster-sets %d with 10 clusters: %v", ok, err)
		}
	}
	for _, bad := range []int{-1, 11} {
		if err := valid(bad); err == nil {
			t.Errorf("--cluster-sets %d with 10 clusters accepted", bad)
		}
	}
}

// processNamed is the sampled process of that name among ps, or nil.
func processNamed(ps []ProcessResult, name string) *ProcessResult {
	for i := range ps {
		if ps[i].Name == name {
			return &ps[i]
		}
	}
	return nil
}
