package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/internal/testing/deployrunner"
)

// installs are the kustomizations a user applies, each to the cluster it names. Every other
// kustomization under deploy/ must be part of one of them (see TestEveryKustomizationRenders).
var installs = []install{
	{dir: "hub", cluster: hubCluster},
	{dir: "agent/spoke", cluster: spokeCluster},
	{dir: "agent/clusteradm", cluster: spokeCluster},
	{dir: "agent/cloudevents/grpc", cluster: spokeCluster, driver: "grpc"},
	{dir: "agent/cloudevents/mqtt", cluster: spokeCluster, driver: "mqtt"},
}

// components are the kustomize Components under deploy/: no install lists them (a user's overlay
// does, to turn one on), so each has a test of its own that renders it into an overlay of its install
// and has a real API server enforce it.
var components = map[string]string{
	"hub/components/nil-executor-validating": "TestNilExecutorComponentRefusesAWorkWithoutExecutor",
}

type clusterRole int

const (
	hubCluster clusterRole = iota
	spokeCluster
)

type install struct {
	dir     string // relative to deploy/
	cluster clusterRole
	// driver is the --workload-source-driver of an agent install that takes its works from a
	// cloudevents source (grpc, mqtt) rather than from the hub's API server ("").
	driver string
}

// kubectl returns the path of kubectl, failing the test when it is missing: these tests exist to
// prove that `kubectl apply -k` works, and a skipped test would prove nothing.
func kubectl(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is not in PATH (%v): the deploy/ tests render with `kubectl kustomize` (kustomize v5) and "+
			"apply with `kubectl apply --dry-run=server`; install kubectl 1.27 or newer", err)
	}
	return path
}

// runKubectl runs kubectl with args and stdin, and returns its stdout and stderr.
func runKubectl(t testing.TB, stdin []byte, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), kubectl(t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), errOut.String(), err
}

// renderings caches the output of `kubectl kustomize` by directory: the files do not change while
// the tests run, and each rendering costs a kubectl process.
var (
	renderingsMu sync.Mutex
	renderings   = map[string]string{}
)

// render runs `kubectl kustomize` on a directory of deploy/ and returns its output and the objects
// in it, in order; the objects are the caller's to change.
func render(t testing.TB, dir string) ([]byte, []*unstructured.Unstructured) {
	t.Helper()
	renderingsMu.Lock()
	defer renderingsMu.Unlock()
	out, ok := renderings[dir]
	var err error
	if !ok {
		out, _, err = runKubectl(t, nil, "kustomize", dir)
	}
	if err != nil {
		t.Fatalf("render %s: %v", dir, err)
	}
	renderings[dir] = out
	objs, err := deployrunner.DecodeObjects([]byte(out))
	if err != nil {
		t.Fatalf("decode the rendering of %s: %v", dir, err)
	}
	if len(objs) == 0 {
		t.Fatalf("kubectl kustomize %s rendered no objects", dir)
	}
	return []byte(out), objs
}

// ofKind returns the objects of a kind, converted to typed objects of T.
func ofKind[T any](t testing.TB, objs []*unstructured.Unstructured, kind string) []*T {
	t.Helper()
	var typed []*T
	for _, o := range objs {
		if o.GetKind() != kind {
			continue
		}
		v := new(T)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, v, true); err != nil {
			t.Fatalf("%s %s/%s does not decode as %T: %v", kind, o.GetNamespace(), o.GetName(), v, err)
		}
		typed = append(typed, v)
	}
	return typed
}

// kustomizationDirs lists every directory under deploy/ that holds a kustomization.yaml.
func kustomizationDirs(t testing.TB) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "kustomization.yaml" {
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// Every kustomization under deploy/ renders, and each is either an install or part of one, so that
// the dry runs below cover everything a user can apply.
func TestEveryKustomizationRenders(t *testing.T) {
	included := map[string]bool{}
	for _, in := range installs {
		included[in.dir] = true
	}
	listed := componentsOfInstalls(t)
	for _, dir := range kustomizationDirs(t) {
		if in, ok := listed[dir]; ok {
			// Rendered as part of the install: a Component of patches alone has nothing to patch.
			if !isComponent(t, dir) {
				t.Errorf("kustomization %s is listed in the components of deploy/%s but is no kind: Component", dir, in)
			}
			continue
		}
		render(t, dir)
		if included[dir] {
			continue
		}
		if _, ok := components[dir]; ok {
			if !isComponent(t, dir) {
				t.Errorf("kustomization %s is listed in components in deploy/render_test.go but is no kind: Component", dir)
			}
			continue
		}
		// A nested kustomization (the CRD copies) is covered when an install lists it.
		parent, base := filepath.Dir(dir), filepath.Base(dir)
		for parent != "." && !included[parent] {
			parent, base = filepath.Dir(parent), filepath.Join(filepath.Base(parent), base)
		}
		if parent == "." || !listsResource(t, parent, base) {
			t.Errorf("kustomization %s is no install and not included by one: add it to installs in deploy/render_test.go, so that it is dry-run", dir)
		}
	}
}

// componentsOfInstalls returns the Components that installs list under components:, by directory
// (relative to deploy/), each with the first install listing it.
func componentsOfInstalls(t testing.TB) map[string]string {
	t.Helper()
	listed := map[string]string{}
	for _, in := range installs {
		data, err := os.ReadFile(filepath.Join(in.dir, "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var k struct {
			Components []string `json:"components"`
		}
		if err := yaml.Unmarshal(data, &k); err != nil {
			t.Fatalf("deploy/%s/kustomization.yaml: %v", in.dir, err)
		}
		for _, c := range k.Components {
			dir := filepath.Join(in.dir, c)
			if _, ok := listed[dir]; !ok {
				listed[dir] = in.dir
			}
		}
	}
	return listed
}

// isComponent reports whether dir's kustomization is a kustomize Component.
func isComponent(t testing.TB, dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "kind: Component" {
			return true
		}
	}
	return false
}

// listsResource reports whether dir's kustomization lists resource, or a directory on its way.
func listsResource(t testing.TB, dir, resource string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		entry := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- "))
		if entry != "" && (resource == entry || strings.HasPrefix(resource, entry+string(filepath.Separator))) {
			return true
		}
	}
	return false
}
