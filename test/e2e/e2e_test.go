package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-mc/ferry/internal/testing/childproc"
	"github.com/ferry-mc/ferry/internal/testing/gobuild"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// repoRoot is the checkout this test file is in.
func repoRoot(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// cluster is one running cluster as a user reaches it: through its kubeconfig.
type cluster struct {
	name   string
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func connect(t *testing.T, name, kubeconfig string) *cluster {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{name: name, dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))}
}

// resource is the client of obj's kind and namespace.
func (c *cluster) resource(t *testing.T, gvk schema.GroupVersionKind, namespace string) dynamic.ResourceInterface {
	t.Helper()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		c.mapper.Reset()
		if m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.dyn.Resource(m.Resource).Namespace(namespace)
	}
	return c.dyn.Resource(m.Resource)
}

// apply creates every object of a YAML file, in namespace unless the object names its own; they are
// deleted when the test ends.
func (c *cluster) apply(t *testing.T, file, namespace string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if obj.GetNamespace() == "" {
			obj.SetNamespace(namespace)
		}
		ri := c.resource(t, obj.GroupVersionKind(), obj.GetNamespace())
		if _, err := ri.Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: create %s %s: %v", c.name, obj.GetKind(), obj.GetName(), err)
		}
		t.Cleanup(func() {
			if err := ri.Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("%s: delete %s %s: %v", c.name, obj.GetKind(), obj.GetName(), err)
			}
		})
		out = append(out, obj)
	}
	return out
}

func (c *cluster) get(t *testing.T, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	return c.resource(t, gvk, namespace).Get(t.Context(), name, metav1.GetOptions{})
}

func eventually(t testing.TB, what string, timeout time.Duration, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// consistently checks cond every 250ms for d and fails the test at the first error, which says what
// stopped holding; a context ending early fails it too, as it cannot say the condition held.
func consistently(t *testing.T, what string, d time.Duration, cond func(ctx context.Context) error) {
	t.Helper()
	ctx := t.Context()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := cond(ctx); err != nil {
			t.Fatalf("%s: after %s: %v", what, (d - time.Until(deadline)).Round(time.Millisecond), err)
		}
		if time.Now().After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, ctx.Err())
		case <-tick.C:
		}
	}
}

var (
	deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	appConfigGVK  = schema.GroupVersionKind{Group: "core.oam.dev", Version: "v1alpha2", Kind: "ApplicationConfiguration"}
	componentGVK  = schema.GroupVersionKind{Group: "core.oam.dev", Version: "v1alpha2", Kind: "Component"}
	workGVK       = schema.GroupVersionKind{Group: "work.open-cluster-management.io", Version: "v1", Kind: "ManifestWork"}
)

// startLocal builds ferry-hub, ferry-agent and ferry-local and runs a local hub with cluster1 and
// cluster2 in the foreground of a child process that dies with the test: the real binaries, joined as
// clusteradm joins, as `make local-up` runs them. It returns the hub and the spokes.
func startLocal(t *testing.T) (hub *cluster, spokes []*cluster, state string) {
	t.Helper()
	root := repoRoot(t)
	bin := t.TempDir()
	for name, pkg := range map[string]string{"ferry-hub": "./cmd/hub", "ferry-agent": "./cmd/agent", "ferry-local": "./hack/local"} {
		build := gobuild.Command(t.Context(), root, filepath.Join(bin, name), pkg)
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, out)
		}
	}
	state = t.TempDir()
	args := []string{"serve", "--state-dir", state, "--deploy-dir", filepath.Join(root, "deploy")}
	if dir := os.Getenv("FERRY_CONTROL_PLANE_DIR"); dir != "" {
		args = append(args, "--binary-dir", dir)
	} else {
		args = append(args, "--binary-dir", filepath.Join(root, "bin/control-plane/current"))
	}
	serve := exec.Command(filepath.Join(bin, "ferry-local"), args...)
	logPath := filepath.Join(state, "serve.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	serve.Stdout, serve.Stderr = logf, logf
	serve.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	logf.Close()
	exited := make(chan struct{})
	go func() { _ = serve.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = serve.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = serve.Process.Kill()
			<-exited
			t.Errorf("ferry-local did not stop within 30s of SIGTERM")
		}
		if t.Failed() {
			for _, log := range []string{"serve.log", "hub-controller.log", "agent-cluster1.log", "agent-cluster2.log"} {
				if data, err := os.ReadFile(filepath.Join(state, log)); err == nil {
					t.Logf("%s:\n%s", log, childproc.Tail(string(data), 40))
				}
			}
		}
	})
	eventually(t, "local hub and spokes ready", 3*time.Minute, func(context.Context) (bool, error) {
		select {
		case <-exited:
			data, _ := os.ReadFile(logPath)
			t.Fatalf("ferry-local exited:\n%s", data)
		default:
		}
		_, err := os.Stat(filepath.Join(state, "clusters"))
		return err == nil, nil
	})
	hub = connect(t, "hub", filepath.Join(state, "hub.kubeconfig"))
	for _, name := range []string{"cluster1", "cluster2"} {
		spokes = append(spokes, connect(t, name, filepath.Join(state, name+".kubeconfig")))
	}
	return hub, spokes, state
}

// clustersUnderTest are the hub and the spokes cluster1 and cluster2: those of FERRY_E2E_HUB_KUBECONFIG
// and FERRY_E2E_SPOKE_KUBECONFIGS (cluster1=<path>,cluster2=<path>) when set, e.g. kind clusters joined
// with clusteradm and running ferry-hub and ferry-agent; otherwise local ones started here. state is
// the local state directory, empty for given clusters.
func clustersUnderTest(t *testing.T) (hub *cluster, spokes []*cluster, state string) {
	t.Helper()
	hubKubeconfig := os.Getenv("FERRY_E2E_HUB_KUBECONFIG")
	if hubKubeconfig == "" {
		return startLocal(t)
	}
	paths := map[string]string{}
	for _, kv := range strings.Split(os.Getenv("FERRY_E2E_SPOKE_KUBECONFIGS"), ",") {
		if name, path, ok := strings.Cut(kv, "="); ok {
			paths[name] = path
		}
	}
	hub = connect(t, "hub", hubKubeconfig)
	for _, name := range []string{"cluster1", "cluster2"} {
		if paths[name] == "" {
			t.Fatalf("FERRY_E2E_HUB_KUBECONFIG is set: FERRY_E2E_SPOKE_KUBECONFIGS must name %s=<kubeconfig>", name)
		}
		spokes = append(spokes, connect(t, name, paths[name]))
	}
	return hub, spokes, ""
}

// The main job, as a user does it: an OAM application and a ManifestWork written on the hub reach both
// spokes through the real ferry-hub and ferry-agent, their status comes back, a change of the component
// follows, and deleting the application removes it from the spokes.
func TestApplicationAndManifestWorkThroughTheRealBinaries(t *testing.T) {
	t.Parallel() // brings clusters of its own: see doc.go
	hub, spokes, state := clustersUnderTest(t)
	root := repoRoot(t)
	hubKubeconfig := os.Getenv("FERRY_E2E_HUB_KUBECONFIG")
	if state != "" {
		hubKubeconfig = filepath.Join(state, "hub.kubeconfig")
	}

	// Both clusters joined and available, as `kubectl get managedclusters` shows them: on the local
	// hub, ferry-hub keeps the conditions of the clusters `ferry-hub clusters add` registered.
	eventually(t, "kubectl get managedclusters: cluster1 and cluster2 JOINED and AVAILABLE True", time.Minute, func(context.Context) (bool, error) {
		columns := managedClusterColumns(t, hubKubeconfig)
		for _, name := range []string{"cluster1", "cluster2"} {
			if columns[name]["JOINED"] != "True" || columns[name]["AVAILABLE"] != "True" {
				return false, nil
			}
		}
		return true, nil
	})

	hub.apply(t, filepath.Join(root, "examples/hello-app.yaml"), "default")
	hub.apply(t, filepath.Join(root, "examples/hello-work.yaml"), "cluster1")

	eventually(t, "AppConfig applied and available on both clusters", time.Minute, func(context.Context) (bool, error) {
		app, err := hub.get(t, appConfigGVK, "default", "hello-app")
		if err != nil {
			return false, nil
		}
		applied, _, _ := unstructured.NestedString(app.Object, "status", "summary", "applied")
		available, _, _ := unstructured.NestedString(app.Object, "status", "summary", "available")
		return applied == "2/2" && available == "2/2", nil
	})
	image := func(s *cluster) string {
		d, err := s.get(t, deploymentGVK, "default", "hello-web")
		if err != nil {
			return ""
		}
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		if len(containers) == 0 {
			return ""
		}
		img, _ := containers[0].(map[string]any)["image"].(string)
		return img
	}
	for _, s := range spokes {
		if got := image(s); got != "nginx:1.27.1" {
			t.Errorf("%s: Deployment hello-web image %q, want the AppConfig's parameter nginx:1.27.1", s.name, got)
		}
		// The example's override: cluster2 runs three replicas, cluster1 the parameter's two.
		want := int64(2)
		if s.name == "cluster2" {
			want = 3
		}
		d, err := s.get(t, deploymentGVK, "default", "hello-web")
		if err != nil {
			t.Fatal(err)
		}
		if got, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); got != want {
			t.Errorf("%s: Deployment hello-web has %d replicas, want %d", s.name, got, want)
		}
	}
	eventually(t, "ManifestWork hello applied on cluster1", time.Minute, func(context.Context) (bool, error) {
		w, err := hub.get(t, workGVK, "cluster1", "hello")
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
		for _, c := range conds {
			c := c.(map[string]any)
			if c["type"] == "Applied" && c["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if _, err := spokes[0].get(t, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "hello", "greeting"); err != nil {
		t.Errorf("cluster1: ConfigMap hello/greeting of the ManifestWork: %v", err)
	}

	// The component changes: a new revision, delivered to both clusters. The AppConfig's parameter
	// still sets the image, so change what it does not set.
	eventually(t, "edit the component", 10*time.Second, func(ctx context.Context) (bool, error) {
		comp, err := hub.get(t, componentGVK, "default", "hello-web")
		if err != nil {
			return false, err
		}
		containers, _, _ := unstructured.NestedSlice(comp.Object, "spec", "workload", "spec", "template", "spec", "containers")
		containers[0].(map[string]any)["env"] = []any{map[string]any{"name": "GREETING", "value": "hello"}}
		if err := unstructured.SetNestedSlice(comp.Object, containers, "spec", "workload", "spec", "template", "spec", "containers"); err != nil {
			return false, err
		}
		_, err = hub.resource(t, componentGVK, "default").Update(ctx, comp, metav1.UpdateOptions{})
		return err == nil, nil
	})
	for _, s := range spokes {
		eventually(t, s.name+": Deployment follows the component's revision 2", time.Minute, func(context.Context) (bool, error) {
			d, err := s.get(t, deploymentGVK, "default", "hello-web")
			if err != nil {
				return false, nil
			}
			return d.GetLabels()["app.oam.dev/revision"] == "hello-web-v2" && strings.Contains(string(must(d.MarshalJSON())), "GREETING"), nil
		})
	}

	// Deleting the application removes it from the spokes, then from the hub.
	if err := hub.resource(t, appConfigGVK, "default").Delete(t.Context(), "hello-app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "application gone from the spokes and the hub", time.Minute, func(context.Context) (bool, error) {
		for _, s := range spokes {
			if _, err := s.get(t, deploymentGVK, "default", "hello-web"); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		_, err := hub.get(t, appConfigGVK, "default", "hello-app")
		return apierrors.IsNotFound(err), nil
	})

	if state == "" {
		return // given clusters: their logs and processes are not ours
	}
	// An agent that stops leaves its cluster AVAILABLE Unknown within a few lease periods (ferry-local
	// registers with a 2s lease; the hub waits 5 periods).
	pid, err := os.ReadFile(filepath.Join(state, "agent-cluster2.pid"))
	if err != nil {
		t.Fatal(err)
	}
	agentPID, err := strconv.Atoi(strings.TrimSpace(string(pid)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(agentPID, syscall.SIGTERM); err != nil {
		t.Fatalf("stop the agent of cluster2: %v", err)
	}
	eventually(t, "kubectl get managedclusters: cluster2 AVAILABLE Unknown after its agent stopped, cluster1 still True", 30*time.Second, func(context.Context) (bool, error) {
		columns := managedClusterColumns(t, hubKubeconfig)
		return columns["cluster2"]["AVAILABLE"] == "Unknown" && columns["cluster1"]["AVAILABLE"] == "True", nil
	})
	// ferry-hub ran as its ServiceAccount with only deploy/hub's RBAC, the agents as theirs with
	// deploy/agent/spoke's on the spoke and, on the hub, only the token `ferry-hub clusters add` bound to
	// deploy/agent/hub-clusterrole.yaml in their cluster's namespace: nothing was refused.
	for _, log := range []string{"hub-controller.log", "agent-cluster1.log", "agent-cluster2.log"} {
		data, err := os.ReadFile(filepath.Join(state, log))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "forbidden") {
				t.Errorf("%s: a permission the shipped role lacks: %s", log, line)
			}
		}
		// The controllers' own log lines reach the file (a failing reconcile would be one of them).
		if log == "hub-controller.log" && (!strings.Contains(string(data), `"Starting workers" controller="appconfigs"`) ||
			strings.Contains(string(data), "SetLogger(...) was never called")) {
			t.Errorf("%s does not show the controllers' log:\n%s", log, childproc.Tail(string(data), 20))
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// managedClusterColumns runs `kubectl get managedclusters` on the hub and returns, by cluster, the
// columns it prints (by header), as a person reads them.
func managedClusterColumns(t *testing.T, kubeconfig string) map[string]map[string]string {
	t.Helper()
	out, err := exec.Command("kubectl", "--kubeconfig", kubeconfig, "get", "managedclusters").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get managedclusters: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	header := lines[0]
	var names []string
	var starts []int
	for i := 0; i < len(header); {
		j := strings.Index(header[i:], "  ")
		name := header[i:]
		if j >= 0 {
			name = header[i : i+j]
		}
		names, starts = append(names, strings.TrimSpace(name)), append(starts, i)
		if j < 0 {
			break
		}
		i += j + strings.IndexFunc(header[i+j:], func(r rune) bool { return r != ' ' })
	}
	rows := map[string]map[string]string{}
	for _, line := range lines[1:] {
		row := map[string]string{}
		for k, name := range names {
			end := len(line)
			if k+1 < len(starts) && starts[k+1] < end {
				end = starts[k+1]
			}
			if starts[k] < end {
				row[name] = strings.TrimSpace(line[starts[k]:end])
			}
		}
		rows[row["NAME"]] = row
	}
	return rows
}
