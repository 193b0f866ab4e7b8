package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"

	"github.com/ferry-mc/ferry/internal/testing/fleetsim"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/internal/testing/worktest"
)

// BenchmarkTransports measures, side by side in one run on one hub (a real kube-apiserver), how fast
// ManifestWorks make the round trip through an agent over each transport, what the agent holds in
// memory, and what becomes of its works when it or its source goes away. 200 works of 5 ConfigMaps
// each are created on the hub at once (16 clients) for each of
//
//	ferry-kube  ferry-agent over the hub's API server, as deploy/agent/spoke runs it
//	ferry-grpc  ferry-agent over OCM's gRPC server (`server grpc` v1.2.0, mutual TLS), with the
//	            klusterlet's grpc arguments
//	ocm-grpc    OCM's work agent v1.2.0 over the same server, with the klusterlet's grpc arguments
//	ocm-kube    OCM's work agent over the hub's API server, with the klusterlet's kube arguments
//
// in this order, one agent at a time (each stopped before the next starts, so that none takes processor
// time from another's figures), each for a spoke cluster of its own. OCM's agent runs with
// --status-sync-interval=60s, what the klusterlet passes on a cluster of one control-plane node (the
// binary's own default, 10s, is what it gets on a cluster of several); the interval paces its
// Available and feedback, not Applied, which is what is timed here.
//
// For each agent, once a first work is Applied (the agent is connected and applying): works/s is the
// works over the time from the first create sent until the last work shows Applied on the hub (its
// current generation), applied-p50-ms and applied-p99-ms the median and 99th percentile of each work's
// time from its create sent to its Applied seen, through a watch of the hub's works; peak-rss-MiB is
// the agent's peak resident set (VmHWM) then, cpu-s the processor time it spent on the works; the
// writes of their ConfigMaps on the spoke are counted, to the end of the agent's restart (each created
// once, and not written again, is what an agent should do). Then the agent is stopped and started
// again, as an upgrade or a rescheduled pod does, and a work created: agent-restart-s is from its
// start until that work is Applied, agent-restart-stalled says it was not within a minute (over OCM
// v1.2.0's gRPC server, sdk-go v1.2.0's transport, OCM's agent's, deadlocks on a resync of 200 works:
// see restartWorks).
//
// Then each gRPC agent afresh, on a cluster of its own, through a restart of OCM's gRPC server while it
// applies restartWorks works (OCM's agent ocmRestartWorks) (restartServerMidApply): restart-first-status-s is from the server back
// until the hub sees a work Applied again, restart-recovery-s until every work is; ferry-agent's
// shortfalls (an object written twice, a status lost) fail the run, OCM's agent's are only reported.
//
// Last, ferry-agent over MQTT (Debian's mosquitto, sdk-go's source client in this process as the
// source) with 200 works while the broker is down for a minute (mqttBrokerOutage): mqtt-agent-back-s
// and mqtt-source-back-s are from the broker's return until each subscribed again, mqtt-change-s until
// a change made at the source meanwhile was applied and mqtt-status-s until the source saw its status;
// mqtt-change-lost says the change was not applied, as happens when the agent is back before the
// source. It is here rather than in a test: a minute's outage, and the source's reconnect races in
// sdk-go (see mqttBrokerOutage) where go test -race sees it.
//
// The log ends with a summary of every figure, by agent. Run with -benchtime=1x (about 7 minutes on a
// 2-core machine); while developing, FERRY_BENCH_TRANSPORT_WORKS and FERRY_BENCH_MQTT_OUTAGE (a
// duration) make it smaller.
func BenchmarkTransports(b *testing.B) {
	n := envInt(b, "FERRY_BENCH_TRANSPORT_WORKS", 200)
	outage := envDuration(b, "FERRY_BENCH_MQTT_OUTAGE", time.Minute)
	for b.Loop() {
		b.StopTimer()
		ocmBinary := ocmPeer(b, "work")
		built := make(chan string, 1)
		go func() { built <- buildBinaries(b, "ferry-agent") }()
		env := localcluster.StartForTest(b, localcluster.Options{
			// The hub's token controller fills the token Secret of ferry-agent's hub credential.
			Hub: localcluster.ClusterSpec{ControllerManager: true},
			Spokes: []localcluster.ClusterSpec{
				{Name: "ferry-kube"}, {Name: "ferry-grpc"}, {Name: "ocm-grpc"}, {Name: "ocm-kube"},
				{Name: "ferry-grpc-restart"}, {Name: "ocm-grpc-restart"}, {Name: "ferry-mqtt"},
			},
		})
		bin := <-built
		if b.Failed() {
			b.FailNow()
		}
		hub := workclient.NewForConfigOrDie(fastClient(env.Hub.Config))
		hubKube := kubernetes.NewForConfigOrDie(env.Hub.Config)
		logs := logDir(b)
		logPath := func(name string) string { return filepath.Join(logs, name+".log") }
		server := startOCMGRPCServer(b, env.Hub, logPath("ocm-grpc-server"))

		// Benchmarks print no more than 10 lines of log: every figure goes into one summary at the end.
		var rows []*transportRow
		// run starts the agent for spoke, measures it with n works and through a restart of its own, and
		// stops it.
		run := func(name string, spoke *localcluster.Cluster, start func(*localcluster.Cluster) *ferryProcess) {
			b.Helper()
			a := watchAgentWrites(b, hub, spoke)
			agent := start(spoke)
			f := measureApplies(b, a, agent, n)
			row := &transportRow{name: name, applyFigures: f}
			b.ReportMetric(f.worksPerSec, "works/s-"+name)
			b.ReportMetric(ms(f.p50), "applied-p50-ms-"+name)
			b.ReportMetric(ms(f.p99), "applied-p99-ms-"+name)
			b.ReportMetric(float64(f.peakRSS)/(1<<20), "peak-rss-MiB-"+name)
			b.ReportMetric(f.cpu.Seconds(), "cpu-s-"+name)
			row.agentRestart, row.agentRestartWorks = restartAgent(b, a, agent)
			// The works' objects through the restart too: an agent started again re-applies what it has.
			row.writes = a.spoke.counts(memoryWorkNames(0, n))
			if row.agentRestart > 0 {
				b.ReportMetric(row.agentRestart.Seconds(), "agent-restart-s-"+name)
			} else {
				b.ReportMetric(1, "agent-restart-stalled-"+name)
			}
			rows = append(rows, row)
			if err := agent.Stop(stopGrace); err != nil {
				b.Error(err)
			}
		}
		ferryGRPC := func(spoke *localcluster.Cluster) *ferryProcess {
			return runUntilTestEnds(b, server.ferryAgent(b, bin, spoke), "ferry-agent", logPath("ferry-agent-"+spoke.Name))
		}
		ocmGRPC := func(spoke *localcluster.Cluster) *ferryProcess {
			return runUntilTestEnds(b, server.ocmAgent(b, ocmBinary, spoke, "--status-sync-interval=60s"), "OCM's work agent", logPath("ocm-work-agent-"+spoke.Name))
		}
		run("ferry-kube", env.Spoke("ferry-kube"), func(spoke *localcluster.Cluster) *ferryProcess {
			return startShippedAgent(b, env, spoke, filepath.Join(bin, "ferry-agent"), logPath("ferry-agent-"+spoke.Name))
		})
		run("ferry-grpc", env.Spoke("ferry-grpc"), ferryGRPC)
		run("ocm-grpc", env.Spoke("ocm-grpc"), ocmGRPC)
		run("ocm-kube", env.Spoke("ocm-kube"), func(spoke *localcluster.Cluster) *ferryProcess {
			// The klusterlet's hub-kubeconfig-secret, with what OCM's registration grants the agent.
			createNamespace(b, hubKube, spoke.Name)
			dir := filepath.Join(b.TempDir(), "hub-kubeconfig")
			if err := env.WriteHubKubeconfigDir(b.Context(), spoke.Name, ocmHubWorkRole(), dir); err != nil {
				b.Fatal(err)
			}
			kubeconfig := filepath.Join(dir, "kubeconfig")
			return runUntilTestEnds(b, ocmWorkAgentCommand(b, ocmBinary, spoke,
				"--workload-source-driver=kube", "--workload-source-config="+kubeconfig, "--status-sync-interval=60s"),
				"OCM's work agent", logPath("ocm-work-agent-"+spoke.Name))
		})

		// Each gRPC agent afresh, for a cluster of its own with no other work, through a restart of the
		// server: ferry-agent with restartWorks works, OCM's with ocmRestartWorks, fewer than make sdk-go
		// v1.2.0's transport deadlock on the resync after the restart (see restartWorks).
		for _, r := range []struct {
			row   *transportRow
			spoke *localcluster.Cluster
			start func(*localcluster.Cluster) *ferryProcess
			works int
		}{
			{rowOf(rows, "ferry-grpc"), env.Spoke("ferry-grpc-restart"), ferryGRPC, restartWorks},
			{rowOf(rows, "ocm-grpc"), env.Spoke("ocm-grpc-restart"), ocmGRPC, ocmRestartWorks},
		} {
			a := watchAgentWrites(b, hub, r.spoke)
			agent := r.start(r.spoke)
			a.warmUp(b)
			restart := restartServerMidApply(b, server, a, 0, r.works)
			r.row.restart = &restart
			b.ReportMetric(restart.firstStatus.Seconds(), "restart-first-status-s-"+r.row.name)
			b.ReportMetric(restart.recovery.Seconds(), "restart-recovery-s-"+r.row.name)
			if err := agent.Stop(stopGrace); err != nil {
				b.Error(err)
			}
		}

		spoke := env.Spoke("ferry-mqtt")
		spokeKube := kubernetes.NewForConfigOrDie(fastClient(spoke.Config))
		createNamespace(b, spokeKube, memNamespace)
		writes := watchSpokeWrites(b, spokeKube)
		broker := worktest.StartMosquitto(b, logs)
		const sourceID = "ferry-bench"
		config := worktest.WriteMQTTConfig(b, b.TempDir(), broker.Addr, sourceID)
		source := worktest.StartMQTTSource(b.Context(), b, config, sourceID, spoke.Name)
		agent := runUntilTestEnds(b, ferryCloudEventsAgent(b, bin, "mqtt", config, spoke), "ferry-agent", logPath("ferry-agent-mqtt"))
		o := mqttBrokerOutage(b, broker, source, agent.Log, writes, spokeKube, n, outage)
		b.ReportMetric(o.agentBack.Seconds(), "mqtt-agent-back-s-ferry")
		b.ReportMetric(o.sourceBack.Seconds(), "mqtt-source-back-s-ferry")
		if o.changeLost {
			b.ReportMetric(1, "mqtt-change-lost-ferry")
		} else {
			b.ReportMetric(o.changeApplied.Seconds(), "mqtt-change-s-ferry")
			b.ReportMetric(o.statusAtSource.Seconds(), "mqtt-status-s-ferry")
		}
		summary, failed := transportSummary(n, rows, o)
		b.Log(summary)
		if failed {
			b.Fail() // the summary says why
		}
		b.StartTimer()
	}
}

// applyFigures are an agent's figures for a batch of works: see BenchmarkTransports.
type applyFigures struct {
	worksPerSec float64
	p50, p99    time.Duration
	peakRSS     uint64
	cpu         time.Duration
	writes      writeCounts
}

// transportRow is one agent's line of the benchmark's table.
type transportRow struct {
	name string
	applyFigures
	restart *serverRestart // over gRPC
	// agentRestart is from the agent's start again until a new work was Applied, 0 if it was not within
	// agentRestartTimeout; agentRestartWorks counts the works of its cluster then.
	agentRestart      time.Duration
	agentRestartWorks int
}

// rowOf is the row of rows named name.
// ocmRestartWorks is how many works OCM's agent applies through a restart of the gRPC server: below the
// answer its transport deadlocks on (at 300 it applied 0 in 3 minutes).
const ocmRestartWorks = 60

func rowOf(rows []*transportRow, name string) *transportRow {
	for _, r := range rows {
		if r.name == name {
			return r
		}
	}
	panic("no row " + name)
}

// agentRestartTimeout bounds the wait for an agent started again to apply a new work: it takes seconds
// (both agents release their leader-election Lease when stopped), so a minute is a stalled agent.
const agentRestartTimeout = time.Minute

// restartAgent stops the agent and starts it again, as an upgrade or a rescheduled pod does, creates a
// work and returns how long after the start it was Applied on the hub (0: not within
// agentRestartTimeout), and how many works the cluster had. Started, an agent over gRPC asks the server
// for every work of its cluster in one resync (see restartWorks).
func restartAgent(b *testing.B, a *agentWrites, agent *ferryProcess) (time.Duration, int) {
	b.Helper()
	works, err := a.hub.WorkV1().ManifestWorks(a.cluster).List(b.Context(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if err := agent.Stop(stopGrace); err != nil {
		b.Error(err)
	}
	started := time.Now()
	agent.start()
	if _, err := a.hub.WorkV1().ManifestWorks(a.cluster).Create(b.Context(), configMapsWork("after-restart", "v", "after-restart"), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if applied, last := a.applied.waitProgress(b, []string{"after-restart"}, agentRestartTimeout, agentRestartTimeout); applied == 1 {
		return last.Sub(started), len(works.Items)
	}
	return 0, len(works.Items)
}

// transportSummary lays the figures of BenchmarkTransports out, by agent, and says whether ferry-agent
// fell short of what it should do (OCM's agent is measured, not held to it).
func transportSummary(n int, rows []*transportRow, mqtt brokerOutage) (summary string, failed bool) {
	var out strings.Builder
	fmt.Fprintf(&out, "One agent after another, in this order: each row's, %d works of 5 ConfigMaps then a restart of the agent; "+
		"then a restart of OCM's gRPC server under ferry-grpc (%d works) and under ocm-grpc (%d), each on a cluster of its own; then ferry-agent over MQTT.\n", n, restartWorks, ocmRestartWorks)
	w := tabwriter.NewWriter(&out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "agent\tworks/s\tapplied p50 ms\tp99 ms\tpeak RSS MiB\tCPU s\tConfigMaps: once/again/deleted/updates\t"+
		"server restart: 1st status s\tall Applied s\tagent restart: works\ts\t")
	for _, r := range rows {
		first, all, again := "-", "-", "stalled"
		if r.restart != nil {
			first, all = fmt.Sprintf("%.1f", r.restart.firstStatus.Seconds()), fmt.Sprintf("%.1f", r.restart.recovery.Seconds())
		}
		if r.agentRestart > 0 {
			again = fmt.Sprintf("%.1f", r.agentRestart.Seconds())
		}
		c := r.writes
		fmt.Fprintf(w, "%s\t%.1f\t%.0f\t%.0f\t%.1f\t%.2f\t%d/%d/%d/%d\t%s\t%s\t%d\t%s\t\n",
			r.name, r.worksPerSec, ms(r.p50), ms(r.p99), float64(r.peakRSS)/(1<<20), r.cpu.Seconds(),
			c.Objects-c.Recreated, c.Recreated, c.Deleted, c.Updates, first, all, r.agentRestartWorks, again)
	}
	_ = w.Flush()
	ours := func(name string) bool { return strings.HasPrefix(name, "ferry-") }
	for _, r := range rows {
		if r.restart == nil {
			continue
		}
		line := fmt.Sprintf("%s, OCM's gRPC server restarted: %s", r.name, r.restart)
		if p := r.restart.problems(); len(p) > 0 {
			line += "; SHORT OF IT: " + strings.Join(p, "; ")
			failed = failed || ours(r.name)
		}
		fmt.Fprintln(&out, line)
	}
	line := "ferry-mqtt: " + mqtt.String()
	if why := mqtt.lostResync(); why != "" {
		line += ": " + why
	}
	if p := mqtt.problems(); len(p) > 0 {
		line += "; SHORT OF IT: " + strings.Join(p, "; ")
		failed = true
	}
	fmt.Fprint(&out, line)
	return out.String(), failed
}

// measureApplies warms the agent up with a first work, creates n works and waits until all are Applied
// on the hub, and returns its figures for them.
func measureApplies(b *testing.B, a *agentWrites, agent *ferryProcess, n int) applyFigures {
	b.Helper()
	a.warmUp(b)
	before := procStat(b, agent)
	start := time.Now()
	sent, err := createWorks(b.Context(), a.hub.WorkV1().ManifestWorks(a.cluster), 0, n)
	if err != nil {
		b.Fatal(err)
	}
	names := memoryWorkNames(0, n)
	last := a.applied.wait(b, agent.Name+": every work Applied", names, 5*time.Minute)
	after := procStat(b, agent)
	var latencies []time.Duration
	for _, name := range names {
		at, _ := a.applied.at(name)
		latencies = append(latencies, at.Sub(sent[name]))
	}
	slices.Sort(latencies)
	return applyFigures{
		worksPerSec: float64(n) / last.Sub(start).Seconds(),
		p50:         percentile(latencies, 0.50),
		p99:         percentile(latencies, 0.99),
		peakRSS:     after.HWM,
		cpu:         after.CPU - before.CPU,
		writes:      a.spoke.counts(names),
	}
}

// percentile is the nearest-rank p-th percentile of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// procStat reads what /proc says of the agent now.
func procStat(b *testing.B, agent *ferryProcess) fleetsim.ProcStat {
	b.Helper()
	s, err := fleetsim.ReadProcStat(agent.PID())
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// envInt is the environment variable name as a positive number, or def when it is not set.
func envInt(b *testing.B, name string, def int) int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// envDuration is the environment variable name as a duration, or def when it is not set.
func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("%s=%q: want a duration", name, v)
	}
	return d
}
