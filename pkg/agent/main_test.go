package agent_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	workclientset "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/internal/testing/worktest"
	"github.com/ferry-mc/ferry/pkg/agent"
	"github.com/ferry-mc/ferry/pkg/agent/process"
)

// The hub and the spoke the package's integration tests share, started by the first test that needs
// them. The spoke runs kube-controller-manager: deletion (foreground propagation) depends on its
// garbage collector. Each test runs its own agent for a cluster namespace of its own on the hub. All
// those agents share the one spoke, where a work's AppliedManifestWork is named after the hub and the
// work: work names must be unique across the package's tests.
var shared = &localcluster.Shared{Options: localcluster.Options{
	Spokes: []localcluster.ClusterSpec{{Name: "spoke", ControllerManager: true}},
}}

func TestMain(m *testing.M) { os.Exit(localcluster.RunShared(m, shared)) }

func testEnv(t testing.TB) *localcluster.Environment { return shared.Get(t) }

// agentFixture is one test's agent and its clients.
type agentFixture struct {
	t       testing.TB
	cluster string // the hub namespace this agent serves
	hub     workclientset.Interface
	kube    kubernetes.Interface // spoke
	dynamic dynamic.Interface    // spoke
	spokeWk workclientset.Interface
	// requests the agent sent, by hub/spoke and read/write
	hubWrites, spokeWrites, spokeReads *atomic.Int64
	cfg                                agentSetup
	cancel                             context.CancelFunc
	done                               chan struct{}
}

// agentSetup is what a test's agent starts from: its configuration, and the hub and spoke
// configurations its clients are built from (as ferry-agent's process builds them) at each start.
type agentSetup struct {
	agent.Config
	Hub, Spoke *rest.Config
}

type agentOption func(*agentSetup)

func withResync(d time.Duration) agentOption {
	return func(c *agentSetup) { c.StatusSyncInterval = d }
}

// startAgent creates a cluster namespace on the hub and runs an agent for it against the spoke.
func startAgent(t testing.TB, opts ...agentOption) *agentFixture {
	t.Helper()
	e := testEnv(t)
	f := &agentFixture{
		t:           t,
		cluster:     "c-" + strings.ToLower(rand.String(6)),
		hubWrites:   &atomic.Int64{},
		spokeWrites: &atomic.Int64{},
		spokeReads:  &atomic.Int64{},
	}
	var err error
	if f.hub, err = workclientset.NewForConfig(e.Hub.Config); err != nil {
		t.Fatal(err)
	}
	spoke := e.Spoke("spoke")
	if f.kube, err = kubernetes.NewForConfig(spoke.Config); err != nil {
		t.Fatal(err)
	}
	if f.dynamic, err = dynamic.NewForConfig(spoke.Config); err != nil {
		t.Fatal(err)
	}
	if f.spokeWk, err = workclientset.NewForConfig(spoke.Config); err != nil {
		t.Fatal(err)
	}
	hubKube, err := kubernetes.NewForConfig(e.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hubKube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.cluster}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.cfg = agentSetup{
		Config: agent.Config{
			ClusterName:        f.cluster,
			AgentID:            f.cluster + "-agent",
			Workers:            4,
			StatusSyncInterval: time.Minute,
			Log:                logr.Discard(),
		},
		Hub:   counted(e.Hub.Config, f.hubWrites, nil),
		Spoke: counted(spoke.Config, f.spokeWrites, f.spokeReads),
	}
	if tt, ok := t.(*testing.T); ok {
		f.cfg.Log = testr.New(tt)
	}
	for _, o := range opts {
		o(&f.cfg)
	}
	f.start()
	t.Cleanup(f.stop)
	return f
}

func (f *agentFixture) start() {
	f.t.Helper()
	cfg := f.cfg.Config
	var err error
	if cfg.Clients, err = process.NewAgentClients(f.cfg.Hub, f.cfg.Spoke); err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel, f.done = cancel, make(chan struct{})
	go func() {
		defer close(f.done)
		if err := agent.Start(ctx, cfg); err != nil {
			f.t.Errorf("agent: %v", err)
		}
	}()
}

func (f *agentFixture) stop() {
	if f.cancel != nil {
		f.cancel()
		<-f.done
		f.cancel = nil
	}
}

// counted copies cfg with a transport that counts mutating requests (and, if reads is set, reads).
func counted(cfg *rest.Config, writes, reads *atomic.Int64) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			watch := req.URL.Query().Get("watch") == "true"
			switch {
			case req.Method == http.MethodGet && !watch:
				if reads != nil {
					reads.Add(1)
				}
			case req.Method != http.MethodGet:
				writes.Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	return c
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// work builds a ManifestWork from YAML manifests, with {{ns}} replaced by the test's cluster name
// (also used as the spoke namespace of its objects).
func (f *agentFixture) work(name string, manifests ...string) *workv1.ManifestWork {
	f.t.Helper()
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.cluster}}
	for _, m := range manifests {
		data, err := yaml.YAMLToJSON([]byte(strings.ReplaceAll(m, "{{ns}}", f.cluster)))
		if err != nil {
			f.t.Fatalf("manifest: %v", err)
		}
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: data}})
	}
	return w
}

func (f *agentFixture) create(w *workv1.ManifestWork) *workv1.ManifestWork {
	f.t.Helper()
	created, err := f.hub.WorkV1().ManifestWorks(f.cluster).Create(f.t.Context(), w, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatalf("create work %s: %v", w.Name, err)
	}
	return created
}

// update changes a work with fn, retrying on conflicts.
func (f *agentFixture) update(name string, fn func(*workv1.ManifestWork)) {
	f.t.Helper()
	worktest.UpdateWork(f.t, f.hub, f.cluster, name, fn)
}

// eventually polls cond until it holds, failing the test after worktest.Timeout.
func (f *agentFixture) eventually(what string, cond func(ctx context.Context) (bool, error)) {
	f.t.Helper()
	worktest.Eventually(f.t, what, cond)
}

// waitWork polls the work until check passes on it, and returns it.
func (f *agentFixture) waitWork(name, what string, check func(*workv1.ManifestWork) bool) *workv1.ManifestWork {
	f.t.Helper()
	return worktest.WaitWork(f.t, f.hub, f.cluster, name, what, check)
}

// manifestCondition returns condition typ of manifest ordinal, or nil.
func manifestCondition(w *workv1.ManifestWork, ordinal int32, typ string) *metav1.Condition {
	for _, m := range w.Status.ResourceStatus.Manifests {
		if m.ResourceMeta.Ordinal == ordinal {
			return meta.FindStatusCondition(m.Conditions, typ)
		}
	}
	return nil
}

func hasCondition(w *workv1.ManifestWork, ordinal int32, typ string, status metav1.ConditionStatus) bool {
	c := manifestCondition(w, ordinal, typ)
	return c != nil && c.Status == status && c.ObservedGeneration == w.Generation
}

func workCondition(w *workv1.ManifestWork, typ string, status metav1.ConditionStatus) bool {
	c := meta.FindStatusCondition(w.Status.Conditions, typ)
	return c != nil && c.Status == status && c.ObservedGeneration == w.Generation
}

// allApplied reports whether the work and every manifest are Applied and Available at its generation.
func allApplied(w *workv1.ManifestWork) bool {
	if !workCondition(w, workv1.WorkApplied, metav1.ConditionTrue) || !workCondition(w, workv1.WorkAvailable, metav1.ConditionTrue) {
		return false
	}
	for i := range w.Spec.Workload.Manifests {
		if !hasCondition(w, int32(i), workv1.ManifestApplied, metav1.ConditionTrue) || !hasCondition(w, int32(i), workv1.ManifestAvailable, metav1.ConditionTrue) {
			return false
		}
	}
	return true
}

// allHealthy reports whether the work is allApplied and every manifest neither Progressing nor Degraded:
// what it applied has settled on the spoke (a Deployment's pods are ready), so nothing more to report.
func allHealthy(w *workv1.ManifestWork) bool {
	if !allApplied(w) {
		return false
	}
	for i := range w.Spec.Workload.Manifests {
		if !hasCondition(w, int32(i), workv1.ManifestProgressing, metav1.ConditionFalse) || !hasCondition(w, int32(i), workv1.ManifestDegraded, metav1.ConditionFalse) {
			return false
		}
	}
	return true
}

// waitResyncs waits until the agent has applied at least n*perResync more manifests: each round
// applies each of the work's perResync objects once, reading it from the spoke or, when its watch shows
// it unchanged since an apply that wrote nothing, taking that apply's result again.
func (f *agentFixture) waitResyncs(n, perResync int64) {
	f.t.Helper()
	applies := func() int64 { return f.spokeReads.Load() + agent.SettledApplies() }
	start := applies()
	f.eventually(fmt.Sprintf("%d resyncs (%d applies)", n, n*perResync), func(context.Context) (bool, error) {
		return applies() >= start+n*perResync, nil
	})
}

// writesOfQuietResyncs waits until three resyncs in a row write nothing (the first rounds write status
// and the AppliedManifestWork), then returns what five more resyncs wrote to the hub and the spoke.
func (f *agentFixture) writesOfQuietResyncs(perResync int64) (hub, spoke int64) {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		h, s := f.hubWrites.Load(), f.spokeWrites.Load()
		f.waitResyncs(3, perResync)
		dh, ds := f.hubWrites.Load()-h, f.spokeWrites.Load()-s
		if dh == 0 && ds == 0 {
			break
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("the agent never went three resyncs without writing; the last three wrote %d times to the hub and %d times to the spoke", dh, ds)
		}
	}
	h, s := f.hubWrites.Load(), f.spokeWrites.Load()
	f.waitResyncs(5, perResync)
	return f.hubWrites.Load() - h, f.spokeWrites.Load() - s
}

// liveObject reads an object of the test's namespace from the spoke as it is stored.
