package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/pkg/agent"
	"github.com/ferry-mc/ferry/pkg/agent/process"
	"github.com/ferry-mc/ferry/pkg/hub"
	"github.com/ferry-mc/ferry/pkg/render"
)

func TestMain(m *testing.M) {
	// The hub controllers run in the test process and log through controller-runtime.
	ctrl.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// runAgent runs a real agent for cluster until the test ends.
func runAgent(t *testing.T, env *localcluster.Environment, cluster string) {
	t.Helper()
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	clients, err := process.NewAgentClients(env.Hub.Config, env.Spoke(cluster).Config)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		done <- agent.Start(ctx, agent.Config{
			ClusterName: cluster, AgentID: cluster + "-agent", Clients: clients,
			Workers: 2, StatusSyncInterval: time.Minute,
			Log: testr.New(t), Ready: func() { close(ready) },
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent of %s: %v", cluster, err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		done <- err
		t.Fatalf("agent of %s ended before it was ready: %v", cluster, err)
	case <-time.After(time.Minute):
		t.Fatalf("agent of %s not ready within a minute", cluster)
	}
}

// runHub runs the hub controllers (hub.Options' zero ClusterSetBindings: enforced) until the test ends,
// in a manager of their own, as ferry-hub runs them (hub.CacheOptions).
func runHub(t *testing.T, env *localcluster.Environment) {
	t.Helper()
	scheme, err := hub.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(env.Hub.Config, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  hub.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Each test runs the same controllers in a manager of its own, in one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.SetupWithManager(mgr, hub.Options{ApplyOnceOnly: render.ApplyOnceOff, RevisionsKept: hub.DefaultRevisionsKept,
		EarlierRevisionsKept: hub.DefaultEarlierRevisionsKept, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("hub controllers: %v", err)
		}
	})
}

// syncBuffer is a buffer the command writes to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// kubectlFerry runs the plugin in this process, as `kubectl ferry --kubeconfig <hub> args...`, writing
// what it prints to out.
func kubectlFerry(ctx context.Context, kubeconfig string, out io.Writer, args ...string) error {
	cmd := newCommand()
	cmd.SetOut(out)
	cmd.SetErr(out)
	cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
	return cmd.ExecuteContext(ctx)
}

// lastTable is the rows of the last table in out whose header starts with header, split at blanks.
func lastTable(t *testing.T, out, header string) [][]string {
	t.Helper()
	var rows [][]string
	in := false
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) > 0 && fields[0] == header:
			rows, in = [][]string{}, true
		case len(fields) == 0:
			in = false
		case in:
			rows = append(rows, fields)
		}
	}
	if rows == nil {
		t.Fatalf("no table with a %s column in:\n%s", header, out)
	}
	return rows
}

// checkRows fails t unless every want row is a row of got.
func checkRows(t *testing.T, out string, got [][]string, want ...[]string) {
	t.Helper()
	for _, w := range want {
		if !slices.ContainsFunc(got, func(r []string) bool { return slices.Equal(r, w) }) {
			t.Errorf("no row %q in:\n%s", w, out)
		}
	}
}

// decodeJSONStream is the complete JSON documents of out, in order, decoded as T.
func decodeJSONStream[T any](out string) []T {
	var docs []T
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var doc T
		if err := dec.Decode(&doc); err != nil {
			return docs // io.EOF, or a document not fully written yet
		}
		docs = append(docs, doc)
	}
}

func manifestWork(t *testing.T, name string, manifests ...string) *workv1.ManifestWork {
	t.Helper()
	mw := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, m := range manifests {
		raw, err := yaml.YAMLToJSON([]byte(m))
		if err != nil {
			t.Fatal(err)
		}
		mw.Spec.Workload.Manifests = append(mw.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	return mw
}

// poll checks cond every 100ms until it holds, failing t after a minute.
func poll(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
