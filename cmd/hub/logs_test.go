package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/internal/testing/gobuild"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

// A reconcile that fails shows in ferry-hub's log as one line naming the AppConfig and the error. The
// failure here is a hub role without `create` on ManifestWorks, run by the real binary.
func TestFailingReconcileIsOneLogLineNamingTheAppConfig(t *testing.T) {
	e := localcluster.StartForTest(t, localcluster.Options{Hub: localcluster.ClusterSpec{Name: "hub"}})
	ctx := t.Context()
	kube := kubernetes.NewForConfigOrDie(e.Hub.Config)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
	if _, err := clusterclient.NewForConfigOrDie(e.Hub.Config).ClusterV1().ManagedClusters().Create(ctx, mc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.Hub.BindGlobalClusterSet(ctx, "default"); err != nil { // the example AppConfig's namespace may reach it
		t.Fatal(err)
	}

	data, err := os.ReadFile("../../deploy/hub/clusterrole.yaml")
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		t.Fatal(err)
	}
	role.Name = "ferry-hub-without-create"
	for i, r := range role.Rules {
		if slices.Contains(r.Resources, "manifestworks") {
			role.Rules[i].Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == "create" })
		}
	}
	kubeconfig := filepath.Join(t.TempDir(), "hub.kubeconfig")
	if err := e.WriteHubControllerKubeconfig(ctx, "ferry-hub-test", role, kubeconfig); err != nil {
		t.Fatal(err)
	}

	bin := filepath.Join(t.TempDir(), "ferry-hub")
	if out, err := gobuild.Command(t.Context(), "", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var stderr lockedBuffer
	cmd := exec.Command(bin, "--kubeconfig="+kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	createExampleApp(t, e)
	var line string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		for _, l := range strings.Split(stderr.String(), "\n") {
			if strings.Contains(l, "Reconciler error") && strings.Contains(l, `controller="appconfigs"`) {
				line = l
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no reconcile error in ferry-hub's log within a minute:\n%s", stderr.String())
	}
	for _, want := range []string{`name="hello-app"`, `namespace="default"`, "forbidden", "manifestworks"} {
		if !strings.Contains(line, want) {
			t.Errorf("the reconcile error's line lacks %s: %s", want, line)
		}
	}
}

// createExampleApp creates examples/hello-app.yaml's Component and AppConfig, placed on cluster1.
func createExampleApp(t *testing.T, e *localcluster.Environment) {
	t.Helper()
	data, err := os.ReadFile("../../examples/hello-app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(e.Hub.Config)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		if u.GetKind() == "ApplicationConfiguration" {
			if err := unstructured.SetNestedStringSlice(u.Object, []string{"cluster1"}, "spec", "placement", "clusters"); err != nil {
				t.Fatal(err)
			}
		}
		gvr := u.GroupVersionKind().GroupVersion().WithResource(map[string]string{
			"Component": "components", "ApplicationConfiguration": "applicationconfigurations"}[u.GetKind()])
		if _, err := dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// lockedBuffer is an io.Writer the process writes to while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
