package main

import (
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/internal/testing/deployrunner"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	works      = schema.GroupVersionResource{Group: "work.open-cluster-management.io", Version: "v1", Resource: "manifestworks"}
	components = schema.GroupVersionResource{Group: "core.oam.dev", Version: "v1alpha2", Resource: "components"}
	appConfigs = schema.GroupVersionResource{Group: "core.oam.dev", Version: "v1alpha2", Resource: "applicationconfigurations"}
)

// Where the test mounts credentials into the containers, as a Deployment would mount Secrets.
const secretsDir = "/var/run/secrets/ferry"

// The images work, not only exist: each binary runs from its image's unpacked root filesystem (nothing
// of this machine's filesystem visible, as the image's non-root user) against a local hub and spoke,
// with credentials limited to the shipped roles. ferry-agent applies a ManifestWork written on the hub
// and reports it Applied; ferry-hub renders an AppConfig into a ManifestWork, which that agent applies.
// A broken image fails here: a dynamically linked binary cannot be started without its loader, a
// binary that needs a file the image lacks exits, a wrong entrypoint or user does not start.
func TestImagesRunAgainstALocalHubAndSpoke(t *testing.T) {
	hubImage, agentImage := imageOf(t, "ferry-hub"), imageOf(t, "ferry-agent")
	env := localcluster.StartForTest(t, localcluster.Options{Spokes: []localcluster.ClusterSpec{{Name: "cluster1"}}})
	ctx := t.Context()
	// Registered into OCM's set default, bound to namespace default: the AppConfig there reaches it.
	if err := env.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}
	if err := env.Hub.BindClusterSet(ctx, localcluster.DefaultClusterSet, "default"); err != nil {
		t.Fatal(err)
	}
	checkout := checkoutRoot(t)

	agentCfg := configOf(t, agentImage)
	agentRoot := t.TempDir()
	extract(t, agentImage.Image, agentRoot)
	agentRole := clusterRole(t, filepath.Join(checkout, "deploy/agent/hub-clusterrole.yaml"))
	mountSecret(t, agentCfg, agentRoot, secretsDir, func(dir string) error {
		if err := env.WriteHubKubeconfigDir(ctx, "cluster1", agentRole, filepath.Join(dir, "hub-kubeconfig")); err != nil {
			return err
		}
		spokeKubeconfig, err := os.ReadFile(env.Spokes[0].Kubeconfig)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, "spoke.kubeconfig"), spokeKubeconfig, 0o600)
	})
	// ferry-agent runs as the klusterlet starts OCM's work agent: the klusterlet's work-agent Deployment
	// (open-cluster-management.io/ocm v1.2.0, manifests/klusterlet/management/klusterlet-work-deployment.yaml)
	// gives `/work agent …` as its container's args and no command, which OCM's image (no entrypoint)
	// runs as its command line and a kubelet appends to any other image's entrypoint: so here the image's
	// own entrypoint with those args, as the kubelet runs them. In its Hosted mode (the spoke reached
	// through --spoke-kubeconfig, as a process outside the cluster must); only what a process on this
	// machine cannot share with other tests differs: the ports.
	// Where the Lease goes when the agent finds no namespace of its pod: the klusterlet's namespace.
	spokeKube, err := kubernetes.NewForConfig(env.Spokes[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := spokeKube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "open-cluster-management-agent"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	addrs, err := deployrunner.FreeLoopbackAddresses(1)
	if err != nil {
		t.Fatal(err)
	}
	listen := addrs[0]
	agent := runContainer(t, agentCfg, agentRoot,
		"/work", "agent",
		"--spoke-cluster-name=cluster1",
		"--workload-source-driver=kube",
		"--workload-source-config="+secretsDir+"/hub-kubeconfig/kubeconfig",
		"--agent-id=0c3e9a3e-klusterlet-uid",
		"--feature-gates=RawFeedbackJsonString=true",
		"--spoke-kubeconfig="+secretsDir+"/spoke.kubeconfig",
		"--terminate-on-files="+secretsDir+"/spoke.kubeconfig",
		"--terminate-on-files="+secretsDir+"/hub-kubeconfig/kubeconfig",
		"--status-sync-interval=60s",
		"--kube-api-qps=20", "--kube-api-burst=50", "--hub-kube-api-qps=20", "--hub-kube-api-burst=50",
		"--appliedmanifestwork-eviction-grace-period=60m",
		"--listen="+listen, "--metrics-bind-address=0", "--health-probe-bind-address=0")

	hubCfg := configOf(t, hubImage)
	hubRoot := t.TempDir()
	extract(t, hubImage.Image, hubRoot)
	hubRole := clusterRole(t, filepath.Join(checkout, "deploy/hub/clusterrole.yaml"))
	mountSecret(t, hubCfg, hubRoot, secretsDir, func(dir string) error {
		return env.WriteHubControllerKubeconfig(ctx, "system:ferry:hub-controller", hubRole, filepath.Join(dir, "hub.kubeconfig"))
	})
	hubController := runContainer(t, hubCfg, hubRoot,
		"--kubeconfig="+secretsDir+"/hub.kubeconfig",
		"--metrics-bind-address=0", "--health-probe-bind-address=0")

	hub, spoke := dynamicClient(t, env.Hub), dynamicClient(t, env.Spokes[0])
	running := func(t *testing.T) { agent.running(t); hubController.running(t) }

	create(t, hub, works, "cluster1", `
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: from-the-image}
spec:
  workload:
    manifests:
    - apiVersion: v1
      kind: ConfigMap
      metadata: {name: delivered-by-agent-image, namespace: default}
      data: {greeting: hello}
`)
	eventually(t, running, "ferry-agent applies the ManifestWork: its ConfigMap on the spoke", func(ctx context.Context) (bool, error) {
		cm, err := spoke.Resource(configMaps).Namespace("default").Get(ctx, "delivered-by-agent-image", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		data, _, _ := unstructured.NestedString(cm.Object, "data", "greeting")
		return data == "hello", err
	})
	// The klusterlet's probes: HTTPS, /healthz, on the agent's serving address, which a self-signed
	// certificate serves (the kubelet does not verify it).
	probe := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // as the kubelet's probes
	for _, path := range []string{"/healthz", "/readyz"} {
		eventually(t, running, "ferry-agent answers the klusterlet's probe "+path+" over HTTPS", func(ctx context.Context) (bool, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+listen+path, nil)
			if err != nil {
				return false, err
			}
			resp, err := probe.Do(req)
			if err != nil {
				return false, nil
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK && resp.TLS != nil, nil
		})
	}
	eventually(t, running, "ferry-agent reports the ManifestWork Applied on the hub", func(ctx context.Context) (bool, error) {
		w, err := hub.Resource(works).Namespace("cluster1").Get(ctx, "from-the-image", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return conditionTrue(w, "Applied"), nil
	})

	create(t, hub, components, "default", `
apiVersion: core.oam.dev/v1alpha2
kind: Component
metadata: {name: rendered-by-hub-image}
spec:
  workload:
    apiVersion: v1
    kind: ConfigMap
    data: {greeting: hello}
  parameters:
  - name: greeting
    fieldPaths: ["data.greeting"]
`)
	create(t, hub, appConfigs, "default", `
apiVersion: core.oam.dev/v1alpha2
kind: ApplicationConfiguration
metadata: {name: image-app}
spec:
  placement:
    clusters: [cluster1]
  components:
  - componentName: rendered-by-hub-image
    parameterValues:
    - {name: greeting, value: from the hub image}
`)
	eventually(t, running, "ferry-hub renders the AppConfig into a ManifestWork for cluster1", func(ctx context.Context) (bool, error) {
		_, err := hub.Resource(works).Namespace("cluster1").Get(ctx, "default.image-app", metav1.GetOptions{})
		return err == nil, err
	})
	eventually(t, running, "the rendered workload, with the AppConfig's parameter, on the spoke", func(ctx context.Context) (bool, error) {
		cm, err := spoke.Resource(configMaps).Namespace("default").Get(ctx, "rendered-by-hub-image", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		data, _, _ := unstructured.NestedString(cm.Object, "data", "greeting")
		return data == "from the hub image", err
	})
	eventually(t, running, "ferry-hub reports the AppConfig applied on its cluster", func(ctx context.Context) (bool, error) {
		app, err := hub.Resource(appConfigs).Namespace("default").Get(ctx, "image-app", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		applied, _, _ := unstructured.NestedString(app.Object, "status", "summary", "applied")
		return applied == "1/1", nil
	})
}

func configOf(t *testing.T, b builtImage) *v1.ConfigFile {
	t.Helper()
	cfg, err := b.Image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func clusterRole(t *testing.T, path string) *rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return role
}

func dynamicClient(t *testing.T, c *localcluster.Cluster) *dynamic.DynamicClient {
	t.Helper()
	client, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// create creates the object of manifest in namespace.
func create(t *testing.T, client *dynamic.DynamicClient, resource schema.GroupVersionResource, namespace, manifest string) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Resource(resource).Namespace(namespace).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s %s/%s: %v", obj.GetKind(), namespace, obj.GetName(), err)
	}
}

func conditionTrue(obj *unstructured.Unstructured, condType string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if c, ok := c.(map[string]any); ok && c["type"] == condType && c["status"] == "True" {
			return true
		}
	}
	return false
}

// eventually polls cond until it holds, failing the test after a deadline generous enough for a loaded
// machine, or at once when check fails (a process died).
func eventually(t *testing.T, check func(*testing.T), what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		check(t)
		ok, err := cond(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within 2m (last error: %v)", what, last)
	}
}
