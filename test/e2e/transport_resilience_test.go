package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1 "open-cluster-management.io/api/work/v1"
	"open-cluster-management.io/sdk-go/pkg/cloudevents/clients/common"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/internal/testing/worktest"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// What becomes of ferry-agent's works when its cloudevents source goes away and comes back: OCM's gRPC
// server restarted while the agent applies works (a test here, and a figure of BenchmarkTransports
// beside OCM's own agent), and the MQTT broker down for a minute (BenchmarkTransports only: see
// mqttBrokerOutage).

// ferry-agent over OCM's gRPC server (mutual TLS, the klusterlet's grpc arguments) is applying
// restartWorks works just created on the hub when the server is killed; it goes on applying them while
// the server is down, and the server starts again on the same port. Every work ends Applied on the hub,
// the status of those applied while the server was down included; no ConfigMap on the spoke was created
// twice, deleted, or written again after its creation.
func TestFerryAgentOverGRPCThroughAServerRestart(t *testing.T) {
	t.Parallel() // brings clusters of its own: see doc.go
	built := make(chan string, 1)
	go func() { built <- buildBinaries(t, "ferry-agent") }()
	env := localcluster.StartForTest(t, localcluster.Options{Spokes: []localcluster.ClusterSpec{{Name: "grpc-restart"}}})
	bin := <-built
	if t.Failed() {
		t.FailNow()
	}
	spoke := env.Spokes[0]
	hub := workclient.NewForConfigOrDie(fastClient(env.Hub.Config))
	logs := logDir(t)
	server := startOCMGRPCServer(t, env.Hub, filepath.Join(logs, "ocm-grpc-server.log"))
	watched := watchAgentWrites(t, hub, spoke)
	runUntilTestEnds(t, server.ferryAgent(t, bin, spoke), "ferry-agent over grpc", filepath.Join(logs, "ferry-agent.log"))
	watched.warmUp(t)

	r := restartServerMidApply(t, server, watched, 0, restartWorks)
	t.Log(r)
	for _, p := range r.problems() {
		t.Error(p)
	}
}

// restartWorks is how many works a restart of the gRPC server interrupts: more than the server queues
// for an agent (100 events, and what gRPC's flow control holds). Over OCM v1.2.0's server, an agent
// that subscribes (at its start, and again after a lost connection) and asks for its works in a resync
// gets every work of its cluster in the answer, whatever it has: the server (sdk-go v1.2.0's broker,
// respondResyncSpecRequest) looks the agent's versions up by the event's ID rather than the work's
// (fixed in sdk-go v1.3.0). sdk-go v1.2.0's own gRPC transport, OCM's agent's, deadlocks on an answer
// the server cannot queue: it holds its lock while it waits for the server to take the resync request,
// the server takes it only once it has queued the answer, and the stream that would drain the answer
// needs that lock. ferry-agent's transport (pkg/agent/cloudevents, grpcTransport) holds no lock over a
// call: with sdk-go's, 1 of these 300 works was Applied 3 minutes after the restart.
const restartWorks = 300

// agentWrites is what a test sees of an agent's works: their Applied on the hub, and the writes of
// their ConfigMaps on the spoke.
type agentWrites struct {
	hub     workclient.Interface
	cluster string
	applied *appliedWatch
	spoke   *spokeWrites
}

// watchAgentWrites creates memNamespace on spoke and watches the works of the cluster on the hub and
// their ConfigMaps on the spoke, until the test ends.
func watchAgentWrites(t testing.TB, hub workclient.Interface, spoke *localcluster.Cluster) *agentWrites {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(fastClient(spoke.Config))
	createNamespace(t, kube, memNamespace)
	return &agentWrites{hub: hub, cluster: spoke.Name, applied: watchApplied(t, hub, spoke.Name), spoke: watchSpokeWrites(t, kube)}
}

// warmUp creates a work of one ConfigMap and waits until it is Applied on the hub: the agent is then
// connected to its source and applying, and what is measured next does not count its start.
func (a *agentWrites) warmUp(t testing.TB) {
	t.Helper()
	if _, err := a.hub.WorkV1().ManifestWorks(a.cluster).Create(t.Context(), configMapsWork("warmup", "v", "warmup"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.applied.wait(t, "the agent applies a first work", []string{"warmup"}, 2*time.Minute)
}

// serverRestart is what a restart of OCM's gRPC server in the middle of applying works showed.
type serverRestart struct {
	works int
	// appliedAtKill counts the works Applied on the hub when the server was killed.
	appliedAtKill int
	// appliedWhileDown are the works whose every ConfigMap the agent created while the server was down.
	appliedWhileDown []string
	// down is from the kill to the server accepting connections again; from then, firstStatus until the
	// hub saw a work Applied again (the agent reconnected), whileDownReported until it saw every work
	// applied while the server was down Applied, recovery until it saw every work Applied.
	down, firstStatus, whileDownReported, recovery time.Duration
	// writes are those of the works' ConfigMaps on the spoke, to the end.
	writes writeCounts
}

func (r serverRestart) String() string {
	return fmt.Sprintf("%d works: %d Applied on the hub when the server was killed; %d applied on the spoke while it was down (%s); "+
		"after the server was back, the first work Applied on the hub %s, those applied while it was down %s, every work %s; the works' objects: %s",
		r.works, r.appliedAtKill, len(r.appliedWhileDown), r.down.Round(time.Millisecond), r.firstStatus.Round(time.Millisecond),
		r.whileDownReported.Round(time.Millisecond), r.recovery.Round(time.Millisecond), r.writes)
}

// problems are the ways the agent fell short of a restart that loses and repeats nothing.
func (r serverRestart) problems() []string {
	var out []string
	if r.appliedAtKill == r.works {
		out = append(out, "every work was Applied before the server was killed: the restart tested nothing")
	}
	if r.writes.Objects != 5*r.works || r.writes.Recreated > 0 || r.writes.Deleted > 0 || r.writes.Updates > 0 {
		out = append(out, fmt.Sprintf("want %d ConfigMaps, each created once and never written again; saw %s", 5*r.works, r.writes))
	}
	return out
}

// restartServerMidApply creates the works numbered from to to on the hub, kills the server as soon as
// they are all created (the agent is applying them then: it applies a work in milliseconds, but 5 ×
// the works' ConfigMaps take seconds), keeps it down until the agent has applied a work while it was
// down, starts it again on the same port, and waits until every work is Applied on the hub. The
// agent's first reconnect is due 5 to 10 s after it lost the server (sdk-go's backoff), so a restart
// of a second or two is made good at the first try.
func restartServerMidApply(t testing.TB, server *ocmGRPCServer, a *agentWrites, from, to int) serverRestart {
	t.Helper()
	names := memoryWorkNames(from, to)
	r := serverRestart{works: len(names)}
	if _, err := createWorks(t.Context(), a.hub.WorkV1().ManifestWorks(a.cluster), from, to); err != nil {
		t.Fatal(err)
	}
	r.appliedAtKill = a.applied.count(names)
	killed := time.Now()
	server.kill()
	worktest.Eventually(t, "the agent applies a work while the server is down", func(context.Context) (bool, error) {
		return len(a.spoke.createdBetween(names, killed, time.Now())) > 0, nil
	})
	server.restart()
	back := time.Now()
	r.down = back.Sub(killed)
	r.appliedWhileDown = a.spoke.createdBetween(names, killed, back)
	last := a.applied.wait(t, "every work Applied after the server's restart", names, 3*time.Minute)
	r.recovery = last.Sub(back)
	r.firstStatus = r.recovery
	for _, name := range names {
		at, _ := a.applied.at(name)
		d := at.Sub(back)
		if d > 0 && d < r.firstStatus {
			r.firstStatus = d
		}
		if slices.Contains(r.appliedWhileDown, name) && d > r.whileDownReported {
			r.whileDownReported = d
		}
	}
	r.writes = a.spoke.counts(names)
	return r
}

// brokerOutage is what an outage of the MQTT broker showed of ferry-agent and a source over it.
type brokerOutage struct {
	works int
	// down is how long the broker was down; agentBack and sourceBack from its return until the agent and
	// the source subscribed again.
	down, agentBack, sourceBack time.Duration
	// changeLost says the change made at the source while the broker was down was not applied within
	// resyncGrace of both being back; else changeApplied is from the broker's return until it was
	// applied on the spoke, and statusAtSource until the source saw it Applied (0: it did not within
	// resyncGrace).
	changeLost                    bool
	changeApplied, statusAtSource time.Duration
	// kept counts the ConfigMaps that kept their UID through the outage, of want.
	kept, want int
	// changed are the writes of the changed work's ConfigMaps, others those of every other work's, to
	// the end.
	changed, others writeCounts
}

// resyncGrace is how long after both ends of a broker outage are connected again a change made during
// it is given to arrive: the agent's resync is answered at once.
const resyncGrace = 30 * time.Second

func (o brokerOutage) String() string {
	change := fmt.Sprintf("the change made at the source meanwhile applied %s and its status at the source %s after the broker was back",
		o.changeApplied.Round(time.Millisecond), o.statusAtSource.Round(time.Millisecond))
	if o.changeLost {
		change = fmt.Sprintf("the change made at the source meanwhile NOT applied %s after both were back", resyncGrace)
	}
	return fmt.Sprintf("%d works, broker down %s; the agent subscribed again %s and the source %s after the broker was back; %s; "+
		"%d of %d ConfigMaps kept their UID; the changed work's objects: %s; the others': %s",
		o.works, o.down.Round(time.Millisecond), o.agentBack.Round(time.Millisecond), o.sourceBack.Round(time.Millisecond), change,
		o.kept, o.want, o.changed, o.others)
}

// problems are the ways the agent fell short of an outage that loses, deletes and repeats nothing.
func (o brokerOutage) problems() []string {
	var out []string
	if o.kept != o.want {
		out = append(out, fmt.Sprintf("%d of %d ConfigMaps kept their UID through the outage", o.kept, o.want))
	}
	wantUpdates := 5
	if o.changeLost {
		wantUpdates = 0
	}
	if o.changed.Objects != 5 || o.changed.Recreated+o.changed.Deleted > 0 || o.changed.Updates != wantUpdates {
		out = append(out, fmt.Sprintf("the changed work: want its 5 ConfigMaps never deleted, updated %d times in all; saw %s", wantUpdates, o.changed))
	}
	if o.others.Objects != 5*(o.works-1) || o.others.Recreated+o.others.Deleted+o.others.Updates > 0 {
		out = append(out, fmt.Sprintf("the unchanged works: want %d ConfigMaps left as they were; saw %s", 5*(o.works-1), o.others))
	}
	switch {
	case o.changeLost && o.sourceBack < o.agentBack:
		out = append(out, "the change made while the broker was down was not applied, though the source was subscribed when the agent asked for every work again")
	case !o.changeLost && o.statusAtSource == 0:
		out = append(out, fmt.Sprintf("the change was applied, but the source did not see it Applied within %s", resyncGrace))
	}
	return out
}

// lostResync says why a change made while the broker was down may not arrive: over a broker that keeps
// no sessions (sdk-go's clients connect with a clean start), the agent's request for every work, sent
// when it subscribes again, reaches no one if the source has not subscribed yet; and the source, when
// it subscribes, asks only for statuses. Both reconnect on sdk-go's jittered backoff, so which comes
// back first is chance.
func (o brokerOutage) lostResync() string {
	if !o.changeLost || o.sourceBack < o.agentBack {
		return ""
	}
	return fmt.Sprintf("the agent subscribed again %s before the source: its request for every work reached no one, and nothing asks again until the next reconnect",
		(o.sourceBack - o.agentBack).Round(time.Millisecond))
}

// mqttBrokerOutage publishes the works numbered 0 to n at the source and waits until the source sees
// them Applied; then the broker is killed, and for down the source changes the first work (as Maestro
// does when a user changes it meanwhile: its database holds the change, which it cannot publish, and
// it answers the agent's resync from there); then the broker starts again, empty, on the same port,
// and the agent (logging to agentLog) and the source are to subscribe again and the agent to resync:
// the change applied on the spoke and its status at the source, every object kept. sdk-go's reconnect
// backoff (5 s, ×5, up to a minute, each jittered up to twice as long) makes the return take up to two
// minutes after the broker is back.
//
// The source is sdk-go's client in this process, and it reconnects too: sdk-go v1.2.0's MQTT transport
// then replaces a channel its previous receive loop read without a lock (transport.go, Connect and
// Receive), which the race detector reports in this process (it did in a run of the source client
// alone through three broker restarts). The outage lives in BenchmarkTransports, which runs without
// it, for that reason; ferry-agent runs as its built binary.
func mqttBrokerOutage(t testing.TB, broker *worktest.Mosquitto, source *worktest.MQTTSource, agentLog string,
	writes *spokeWrites, spoke kubernetes.Interface, n int, down time.Duration) brokerOutage {
	t.Helper()
	ctx := t.Context()
	names := memoryWorkNames(0, n)
	o := brokerOutage{works: n, down: down, want: 5 * n}
	for i := range n {
		w := memoryWork(i)
		// The version the source keeps of the work: the agent's resync tells it which it has.
		w.Annotations = map[string]string{common.CloudEventsResourceVersionAnnotationKey: "1"}
		if _, err := source.Works.Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sourceSees := func(ok func(*workv1.ManifestWork) bool, names ...string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			for _, name := range names {
				w, err := source.Works.Get(ctx, name, metav1.GetOptions{})
				if err != nil || !ok(w) {
					return false, nil
				}
			}
			return true, nil
		}
	}
	applied := func(w *workv1.ManifestWork) bool {
		return workreport.WorkStatus(w.Status.Conditions, workv1.WorkApplied, w.Generation) == metav1.ConditionTrue
	}
	eventually(t, "the source sees every work Applied", 2*time.Minute, sourceSees(applied, names...))
	before := writes.uids(names)
	// sdk-go's transport logs each subscription of the agent's (the first, and one per reconnect).
	agentSubscriptions := func() int { return countLogLines(t, agentLog, "subscribed to mqtt broker") }
	agentSubscribed, sourceSubscribed := agentSubscriptions(), len(source.Subscriptions())

	if err := broker.Kill(); err != nil {
		t.Fatal(err)
	}
	downAt := time.Now()
	changed, err := source.Works.Get(ctx, names[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	changed = changed.DeepCopy()
	changed.Spec = memoryWorkWithValue(0, "changed").Spec
	changed.Generation, changed.ResourceVersion = 2, "2"
	changed.Annotations[common.CloudEventsResourceVersionAnnotationKey] = "2"
	if err := source.Store.Update(changed); err != nil {
		t.Fatal(err)
	}
	select {
	case <-time.After(time.Until(downAt.Add(down))):
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	if err := broker.Restart(); err != nil {
		t.Fatal(err)
	}
	worktest.WaitListening(t, "mosquitto", broker.Addr)
	back := time.Now()

	var agentBack, sourceBack bool
	eventually(t, "the agent and the source subscribe again", 4*time.Minute, func(context.Context) (bool, error) {
		if !agentBack && agentSubscriptions() > agentSubscribed {
			agentBack, o.agentBack = true, time.Since(back)
		}
		if !sourceBack && len(source.Subscriptions()) > sourceSubscribed {
			sourceBack, o.sourceBack = true, time.Since(back)
		}
		return agentBack && sourceBack, nil
	})
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, resyncGrace, true, func(ctx context.Context) (bool, error) {
		cm, err := spoke.CoreV1().ConfigMaps(memNamespace).Get(ctx, "cm-0000-0", metav1.GetOptions{})
		return err == nil && cm.Data["k"] == "changed", nil
	})
	o.changeLost = err != nil
	if !o.changeLost {
		o.changeApplied = time.Since(back)
		if wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, resyncGrace, true, sourceSees(func(w *workv1.ManifestWork) bool {
			return w.Generation == 2 && applied(w)
		}, names[0])) == nil {
			o.statusAtSource = time.Since(back)
		}
	}
	eventually(t, "the source still sees every work Applied", worktest.Timeout, sourceSees(applied, names[1:]...))

	for cm, uid := range writes.uids(names) {
		if before[cm] == uid {
			o.kept++
		}
	}
	o.changed, o.others = writes.counts(names[:1]), writes.counts(names[1:])
	return o
}

// countLogLines counts the lines of the log at path that hold s.
func countLogLines(t testing.TB, path, s string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), s)
}
