package e2e

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"

	"github.com/ferry-mc/ferry/internal/testing/benchgoal"
	"github.com/ferry-mc/ferry/internal/testing/deployrunner"
	"github.com/ferry-mc/ferry/internal/testing/fleetsim"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

// BenchmarkShippedAgentMemory measures what ferry-agent, run as deploy/agent/spoke runs it (its
// defaults), holds in memory: its peak resident set once 200 ManifestWorks of 5 ConfigMaps each are
// applied, and what each further work adds on the way to 1,000 (the growth of the peak, per work);
// beside them, its peak before the first work (what the process costs with nothing to do), and at 200
// works how much of the resident set is the executable's own pages, mapped from its file.
// Goals: 50 MiB at 200 works, and no more than OCM's work agent per further work (28 KiB). Run with
// -benchtime=1x.
func BenchmarkShippedAgentMemory(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		env := localcluster.StartForTest(b, localcluster.Options{
			// The hub's token controller fills the token Secret of the agent's hub credential.
			Hub:    localcluster.ClusterSpec{ControllerManager: true},
			Spokes: []localcluster.ClusterSpec{{Name: "cluster1"}},
		})
		spoke := env.Spokes[0]
		bin := buildBinaries(b, "ferry-agent")
		if b.Failed() {
			b.FailNow()
		}
		// With FERRY_BENCH_PROFILE_DIR set, the agent serves its profiles, and its heap before the first
		// work, at 200 and at 1,000 works is written there (agent-heap-0.pprof, agent-heap-200.pprof,
		// agent-heap-1000.pprof: read with go tool pprof, -base an earlier one to see what the works in
		// between hold; the .txt beside each ends with the runtime's MemStats).
		profileDir := os.Getenv("FERRY_BENCH_PROFILE_DIR")
		var overrides []deployrunner.Override
		var pprofAddr string
		if profileDir != "" {
			addrs, err := deployrunner.FreeLoopbackAddresses(1)
			if err != nil {
				b.Fatal(err)
			}
			pprofAddr = addrs[0]
			overrides = append(overrides, deployrunner.Add("pprof-bind-address", pprofAddr))
		}
		agent := startShippedAgent(b, env, spoke, filepath.Join(bin, "ferry-agent"), filepath.Join(logDir(b), "ferry-agent.log"), overrides...)
		createNamespace(b, kubernetes.NewForConfigOrDie(fastClient(spoke.Config)), memNamespace)
		hub := workclient.NewForConfigOrDie(fastClient(env.Hub.Config))
		applied := watchApplied(b, hub, spoke.Name)
		read := func() fleetsim.ProcStat {
			s, err := fleetsim.ReadProcStat(agent.PID())
			if err != nil {
				b.Fatal(err)
			}
			return s
		}
		atStart := read()
		if profileDir != "" {
			writeHeapProfile(b, pprofAddr, profileDir, "agent-heap-0")
		}
		b.StartTimer()
		createMemoryWorks(b, hub, spoke.Name, applied, 0, 200)
		b.StopTimer()
		at200 := read()
		if profileDir != "" {
			writeHeapProfile(b, pprofAddr, profileDir, "agent-heap-200")
		}
		b.StartTimer()
		createMemoryWorks(b, hub, spoke.Name, applied, 200, 1000)
		b.StopTimer()
		at1000 := read()
		if profileDir != "" {
			writeHeapProfile(b, pprofAddr, profileDir, "agent-heap-1000")
		}
		b.ReportMetric(float64(atStart.HWM)/(1<<20), "peak-rss-MiB@0works")
		benchgoal.Report(b, float64(at200.HWM)/(1<<20), "peak-rss-MiB@200works", benchgoal.AtMost(50))
		b.ReportMetric(float64(at1000.HWM)/(1<<20), "peak-rss-MiB@1000works")
		benchgoal.Report(b, (float64(at1000.HWM)-float64(at200.HWM))/1024/800, "KiB/work-200-to-1000", benchgoal.AtMost(28))
		// Of the resident set at 200 works, the executable's pages mapped from its file and the rest:
		// the process's own memory.
		b.ReportMetric(float64(at200.RSSFile)/(1<<20), "file-rss-MiB@200works")
		b.ReportMetric(float64(at200.RSS-at200.RSSFile)/(1<<20), "own-rss-MiB@200works")
		b.StartTimer()
	}
}

// createMemoryWorks creates the works numbered from to to (5 ConfigMaps each in namespace mem of the
// spoke) in the cluster's namespace of the hub and waits until every work so far reports Applied.
func createMemoryWorks(b *testing.B, hub workclient.Interface, cluster string, applied *appliedWatch, from, to int) {
	b.Helper()
	if _, err := createWorks(b.Context(), hub.WorkV1().ManifestWorks(cluster), from, to); err != nil {
		b.Fatal(err)
	}
	applied.wait(b, "works applied", memoryWorkNames(0, to), 5*time.Minute)
}

// writeHeapProfile writes the heap profile of the agent serving pprof at addr, after a collection, to
// dir/name.pprof, and its text form with the runtime's MemStats to dir/name.txt.
func writeHeapProfile(b *testing.B, addr, dir, name string) {
	for query, ext := range map[string]string{"gc=1": ".pprof", "gc=1&debug=1": ".txt"} {
		resp, err := http.Get("http://" + addr + "/debug/pprof/heap?" + query)
		if err != nil {
			b.Fatal(err)
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("heap profile from %s: %s %v", addr, resp.Status, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+ext), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
