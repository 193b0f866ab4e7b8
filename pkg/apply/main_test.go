package apply_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/pkg/apply"
)

// The one real API server the package's tests share, started by the first test that needs it; each
// test works in its own namespace. The apply engine talks to one API server; the environment calls it
// the hub.
var shared = &localcluster.Shared{Options: localcluster.Options{Hub: localcluster.ClusterSpec{Name: "spoke"}}}

func TestMain(m *testing.M) { os.Exit(localcluster.RunShared(m, shared)) }

func testCluster(t *testing.T) *localcluster.Cluster { return shared.Get(t).Hub }

// fixture is a test's view of the cluster: clients, an Applier, its namespace, and a count of the
// mutating requests the Applier sent.
type fixture struct {
	t       *testing.T
	ns      string
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	applier *apply.Applier
	writes  *atomic.Int64
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, writes: &atomic.Int64{}}
	cluster := testCluster(t)
	var err error
	if f.kube, err = kubernetes.NewForConfig(cluster.Config); err != nil {
		t.Fatal(err)
	}
	if f.dynamic, err = dynamic.NewForConfig(cluster.Config); err != nil {
		t.Fatal(err)
	}
	// The Applier's own clients count what they write.
	counted := rest.CopyConfig(cluster.Config)
	counted.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &writeCounter{next: rt, writes: f.writes} })
	applierClient, err := dynamic.NewForConfig(counted)
	if err != nil {
		t.Fatal(err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	f.applier = apply.New(applierClient, mapper)

	f.ns = "t-" + strings.ToLower(rand.String(8))
	if _, err := f.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return f
}

// writeCounter counts requests that can change state on the server.
type writeCounter struct {
	next   http.RoundTripper
	writes *atomic.Int64
}

func (w *writeCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		w.writes.Add(1)
	}
	return w.next.RoundTrip(req)
}

// manifest decodes YAML into an object, with {{ns}} replaced by the test's namespace.
func (f *fixture) manifest(y string) *unstructured.Unstructured {
	f.t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(strings.ReplaceAll(y, "{{ns}}", f.ns)), &u.Object); err != nil {
		f.t.Fatalf("decode manifest: %v", err)
	}
	return u
}

// apply applies and fails the test on error.
func (f *fixture) apply(u *unstructured.Unstructured, opts apply.Options) apply.Result {
	f.t.Helper()
	res, err := f.applier.Apply(f.t.Context(), u, opts)
	if err != nil {
		f.t.Fatalf("apply %s: %v", u.GetName(), err)
	}
	return res
}

// noWrites applies and fails the test if the Applier sent any mutating request.
func (f *fixture) noWrites(u *unstructured.Unstructured, opts apply.Options) apply.Result {
	f.t.Helper()
	before := f.writes.Load()
	res := f.apply(u, opts)
	if n := f.writes.Load() - before; n != 0 {
		f.t.Errorf("apply %s with nothing changed sent %d writes (operation %s), want 0", u.GetName(), n, res.Operation)
	}
	return res
}

// get reads the live object of res.
func (f *fixture) get(res apply.Result, name string) *unstructured.Unstructured {
	f.t.Helper()
	var ri dynamic.ResourceInterface = f.dynamic.Resource(res.Resource)
	if res.Namespaced {
		ri = f.dynamic.Resource(res.Resource).Namespace(f.ns)
	}
	obj, err := ri.Get(f.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("get %s: %v", name, err)
	}
	return obj
}

// eventually polls cond until it holds or a deadline passes.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func nested(t *testing.T, u *unstructured.Unstructured, fields ...string) any {
	t.Helper()
	v, _, err := unstructured.NestedFieldNoCopy(u.Object, fields...)
	if err != nil {
		t.Fatalf("read %v: %v", fields, err)
	}
	return v
}
