package process_test

import (
	"context"
	"net/http"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workclientset "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/internal/testing/worktest"
	"github.com/ferry-mc/ferry/pkg/agent/process"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// The hub and the spoke the package's tests share, started by the first test that needs them. Each test
// runs ferry-agent's process (Run) for a cluster namespace of its own on the hub; a work's
// AppliedManifestWork on the spoke is named after the hub and the work, so work names carry the
// test's cluster name. The spoke runs kube-controller-manager: a deleted work's objects go with its
// AppliedManifestWork by the garbage collector.
var shared = &localcluster.Shared{Options: localcluster.Options{
	Spokes: []localcluster.ClusterSpec{{Name: "spoke", ControllerManager: true}},
}}

func TestMain(m *testing.M) { os.Exit(localcluster.RunShared(m, shared)) }

func testEnv(t testing.TB) *localcluster.Environment { return shared.Get(t) }

// runOptions are ferry-agent's options for a test's Run on the package's spoke: no metrics or probe
// server, the Lease in kube-system, and what set gives (the hub, the cluster), completed and
// validated.
func runOptions(t *testing.T, set func(*process.Options)) *process.Options {
	t.Helper()
	o := process.NewOptions()
	o.SpokeKubeconfig = testEnv(t).Spoke("spoke").Kubeconfig
	o.MetricsBindAddress, o.HealthProbeBindAddress = "0", "0"
	o.LeaderElectionNamespace = "kube-system"
	set(o)
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	return o
}

// clusterWorks is one test's cluster namespace on the hub, seen through the hub's work API: what the
// test gives the agent it runs, and where it reads the agent's reports.
type clusterWorks struct {
	t       testing.TB
	cluster string
	hub     workclientset.Interface
}

// work builds a ManifestWork of YAML manifests.
func (f *clusterWorks) work(name string, manifests ...string) *workv1.ManifestWork {
	f.t.Helper()
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.cluster}}
	for _, m := range manifests {
		data, err := yaml.YAMLToJSON([]byte(m))
		if err != nil {
			f.t.Fatalf("manifest: %v", err)
		}
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: data}})
	}
	return w
}

func (f *clusterWorks) create(w *workv1.ManifestWork) {
	f.t.Helper()
	if _, err := f.hub.WorkV1().ManifestWorks(f.cluster).Create(f.t.Context(), w, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("create work %s: %v", w.Name, err)
	}
}

// update changes a work with fn, retrying on conflicts.
func (f *clusterWorks) update(name string, fn func(*workv1.ManifestWork)) {
	f.t.Helper()
	worktest.UpdateWork(f.t, f.hub, f.cluster, name, fn)
}

// eventually polls cond until it holds, failing the test after worktest.Timeout.
func (f *clusterWorks) eventually(what string, cond func(ctx context.Context) (bool, error)) {
	f.t.Helper()
	worktest.Eventually(f.t, what, cond)
}

// waitWork polls the work until check passes on it.
func (f *clusterWorks) waitWork(name, what string, check func(*workv1.ManifestWork) bool) {
	f.t.Helper()
	worktest.WaitWork(f.t, f.hub, f.cluster, name, what, check)
}

// allApplied reports whether the work and each of its manifests are Applied and Available at its
// generation.
func allApplied(w *workv1.ManifestWork) bool {
	done := func(conds []metav1.Condition) bool {
		for _, typ := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
			if workreport.WorkStatus(conds, typ, w.Generation) != metav1.ConditionTrue {
				return false
			}
		}
		return true
	}
	if !done(w.Status.Conditions) || len(w.Status.ResourceStatus.Manifests) != len(w.Spec.Workload.Manifests) {
		return false
	}
	for _, m := range w.Status.ResourceStatus.Manifests {
		if !done(m.Conditions) {
			return false
		}
	}
	return true
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
