package node

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	workclientset "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/internal/testing/gobuild"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/internal/testing/podinstall"
	"github.com/ferry-mc/ferry/internal/testing/worktest"
	"github.com/ferry-mc/ferry/pkg/agent/process"
	"github.com/ferry-mc/ferry/pkg/registration"
)

// installedCluster is the name the real-node cluster is registered under with its own hub: the hub
// manages itself, as OCM's "local-cluster" does, because a machine runs one real node at a time.
const installedCluster = "local-cluster"

// podWait bounds the waits on pods and Deployments: a pod of an imported image runs in about two
// seconds, and the kubelet refreshes a mounted Secret within its sync period (10 s on the local node; a
// minute plus jitter at the kubelet's default, which the deadline leaves room for).
const podWait = 3 * time.Minute

var appConfigResource = schema.GroupVersionResource{Group: "core.oam.dev", Version: "v1alpha2", Resource: "applicationconfigurations"}

// Ferry installed as a user installs it: the images `make images` builds imported into the node under
// the tags deploy/ runs, `kubectl apply -k deploy/hub`, `ferry-hub clusters add`, `kubectl apply -k
// deploy/agent/spoke` — nothing overridden — on one cluster with a real node that is both the hub and
// its managed cluster. Then what a pod changes: the agent applies and reports from its pod, the hub
// delivers an AppConfig whose workload runs on the node, a renewed hub credential reaches the running
// agent through its mounted Secret, a deleted pod's replacement takes the Lease and converges without
// re-creating anything, and the namespaces enforce the restricted Pod Security Standard.
func TestFerryInstalledFromDeploy(t *testing.T) {
	ctx := t.Context()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	images := t.TempDir()
	built := time.Now()
	if err := podinstall.BuildImages(ctx, root, images); err != nil {
		t.Fatal(err)
	}
	t.Logf("images built in %s", time.Since(built).Round(100*time.Millisecond))
	hubCLI := buildHubCLI(t, root)

	started := time.Now()
	env := localcluster.StartForTest(t, localcluster.Options{Hub: localcluster.ClusterSpec{Name: "hub", RealNode: true}})
	c := env.Hub
	t.Logf("cluster with a real node started in %s", time.Since(started).Round(time.Millisecond))
	in := &podinstall.Installer{DeployDir: filepath.Join(root, "deploy"), Cluster: c, HubCLI: hubCLI, Log: t.Logf}
	took, err := in.ImportImages(ctx, images)
	if err != nil {
		t.Fatal(err)
	}
	for image, d := range took {
		t.Logf("image %s imported in %s", image, d.Round(time.Millisecond))
	}
	kube := kubernetes.NewForConfigOrDie(c.Config)
	works := workclientset.NewForConfigOrDie(c.Config)
	dyn := dynamic.NewForConfigOrDie(c.Config)
	t.Cleanup(func() {
		if t.Failed() {
			logPods(t, kube, podinstall.HubNamespace, podinstall.AgentNamespace)
		}
	})

	applied := time.Now()
	if _, err := in.InstallHub(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("ferry-hub Ready %s after kubectl apply -k deploy/hub", time.Since(applied).Round(time.Millisecond))

	if err := in.Register(ctx, installedCluster); err != nil {
		t.Fatal(err)
	}
	createConfigMapWork(t, works, "first")
	applied = time.Now()
	if err := in.InstallAgent(ctx); err != nil {
		t.Fatal(err)
	}
	waitWorkApplied(t, works, "first")
	t.Logf("work Applied %s after kubectl apply -k deploy/agent/spoke", time.Since(applied).Round(time.Millisecond))
	agentPod, err := in.WaitDeploymentReady(ctx, podinstall.AgentNamespace, "ferry-agent")
	if err != nil {
		t.Fatal(err)
	}
	firstUID := configMapUID(t, kube, "first")

	t.Run("the agent's pod reports its work's status", func(t *testing.T) {
		w := worktest.WaitWork(t, works, installedCluster, "first", "the ConfigMap's status fed back", func(w *workv1.ManifestWork) bool {
			return len(w.Status.ResourceStatus.Manifests) == 1 && meta.IsStatusConditionTrue(w.Status.ResourceStatus.Manifests[0].Conditions, workv1.ManifestAvailable)
		})
		if got := w.Status.ResourceStatus.Manifests[0].ResourceMeta.Name; got != "installed-first" {
			t.Errorf("manifest status names %q, want installed-first", got)
		}
	})

	t.Run("examples/node-work.yaml runs its pod on the node", func(t *testing.T) {
		// What `make demo-node` applies.
		if err := in.Kubectl(ctx, "-n", installedCluster, "apply", "-f", filepath.Join(root, "examples", "node-work.yaml")); err != nil {
			t.Fatal(err)
		}
		waitWorkApplied(t, works, "node-hello")
		waitFor(t, "the work's Deployment node-hello/idle ready on the node", podWait, func(ctx context.Context) (bool, error) {
			d, err := kube.AppsV1().Deployments("node-hello").Get(ctx, "idle", metav1.GetOptions{})
			return err == nil && d.Status.ReadyReplicas == 1, nil
		})
		pods, err := kube.CoreV1().Pods("node-hello").List(ctx, metav1.ListOptions{LabelSelector: "app=idle"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != c.RealNode.Name {
				t.Errorf("pod %s on node %q, want the real node %s", p.Name, p.Spec.NodeName, c.RealNode.Name)
			}
		}
	})

	t.Run("the hub delivers an AppConfig whose workload runs on the node", func(t *testing.T) {
		deliverAppConfig(t, dyn, kube)
	})

	t.Run("the namespaces enforce the restricted Pod Security Standard", func(t *testing.T) {
		for _, ns := range []string{podinstall.HubNamespace, podinstall.AgentNamespace} {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "unrestricted", Namespace: ns},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "c", Image: localcluster.PauseImage, ImagePullPolicy: corev1.PullNever,
				}}},
			}
			_, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "restricted`) {
				t.Errorf("namespace %s admitted a pod that runs as root with every capability: %v", ns, err)
			}
		}
	})

	t.Run("a renewed hub credential reaches the running agent", func(t *testing.T) {
		// Revoke the token the agent runs with — delete its ServiceAccount on the hub: a token Secret
		// re-made for the same ServiceAccount would hold the very same token, which names the
		// ServiceAccount and the Secret and nothing else — then register again: a new ServiceAccount,
		// a new token, written into the agent's mounted Secret.
		old := hubKubeconfig(t, kube)
		if err := kube.CoreV1().ServiceAccounts(installedCluster).Delete(ctx, registration.AgentServiceAccount, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		deleted := time.Now()
		// The API server keeps a token it authenticated for a few seconds: wait until it refuses the
		// old one, so that from here on only the new token can write the agent's reports.
		oldConfig, err := clientcmd.RESTConfigFromKubeConfig(old)
		if err != nil {
			t.Fatal(err)
		}
		oldClient := workclientset.NewForConfigOrDie(oldConfig)
		waitFor(t, "the hub refuses the old token", podWait, func(ctx context.Context) (bool, error) {
			_, err := oldClient.WorkV1().ManifestWorks(installedCluster).List(ctx, metav1.ListOptions{Limit: 1})
			return apierrors.IsUnauthorized(err), nil
		})
		t.Logf("old token refused %s after its ServiceAccount was deleted", time.Since(deleted).Round(time.Millisecond))
		if err := in.Register(ctx, installedCluster); err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(hubKubeconfig(t, kube), old) {
			t.Fatal("clusters add wrote the same hub credential again: nothing was renewed")
		}
		renewed := time.Now()
		createConfigMapWork(t, works, "after-renewal")
		waitFor(t, "work after-renewal Applied with the renewed credential", podWait, func(ctx context.Context) (bool, error) {
			w, err := works.WorkV1().ManifestWorks(installedCluster).Get(ctx, "after-renewal", metav1.GetOptions{})
			return err == nil && meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkApplied), nil
		})
		t.Logf("work applied %s after the credential was renewed (the kubelet refreshes a mounted Secret within its sync period, 10 s here)", time.Since(renewed).Round(time.Millisecond))
		pod, err := kube.CoreV1().Pods(agentPod.Namespace).Get(ctx, agentPod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the agent's pod is gone: %v", err)
		}
		if n := restarts(pod); n != 0 || pod.UID != agentPod.UID {
			t.Errorf("the agent restarted to take the renewed credential (pod %s, %d restarts)", pod.Name, n)
		}
	})

	t.Run("a deleted pod's replacement takes the Lease and re-creates nothing", func(t *testing.T) {
		before := map[string]string{"first": firstUID, "after-renewal": configMapUID(t, kube, "after-renewal")}
		if err := kube.CoreV1().Pods(agentPod.Namespace).Delete(ctx, agentPod.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		deleted := time.Now()
		var replacement *corev1.Pod
		waitFor(t, "a replacement agent pod holds the Lease "+process.LeaderElectionLeaseName, podWait, func(ctx context.Context) (bool, error) {
			lease, err := kube.CoordinationV1().Leases(agentPod.Namespace).Get(ctx, process.LeaderElectionLeaseName, metav1.GetOptions{})
			if err != nil || lease.Spec.HolderIdentity == nil {
				return false, nil
			}
			holder := *lease.Spec.HolderIdentity
			if strings.HasPrefix(holder, agentPod.Name+"_") {
				return false, nil
			}
			pods, err := agentPods(ctx, kube)
			if err != nil {
				return false, err
			}
			for i := range pods {
				if strings.HasPrefix(holder, pods[i].Name+"_") {
					replacement = &pods[i]
					return true, nil
				}
			}
			return false, nil
		})
		t.Logf("pod %s took the Lease %s after %s was deleted", replacement.Name, time.Since(deleted).Round(time.Millisecond), agentPod.Name)
		createConfigMapWork(t, works, "after-replacement")
		waitWorkApplied(t, works, "after-replacement")
		for work, uid := range before {
			waitWorkApplied(t, works, work)
			if got := configMapUID(t, kube, work); got != uid {
				t.Errorf("ConfigMap of work %s re-created by the replacement (uid %s, was %s)", work, got, uid)
			}
		}
		pod := waitPod(t, kube, replacement.Namespace, replacement.Name, podinstall.PodReady)
		if n := restarts(pod); n != 0 {
			t.Errorf("replacement pod %s restarted %d times: its liveness probe failed", pod.Name, n)
		}
	})
}

// hubKubeconfig is the kubeconfig of the agent's Secret hub-kubeconfig-secret.
func hubKubeconfig(t *testing.T, kube kubernetes.Interface) []byte {
	t.Helper()
	s, err := kube.CoreV1().Secrets(podinstall.AgentNamespace).Get(t.Context(), registration.HubKubeconfigSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Data["kubeconfig"]
}

// buildHubCLI builds ferry-hub for its `clusters add` command.
func buildHubCLI(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ferry-hub")
	cmd := gobuild.Command(t.Context(), root, bin, "./cmd/hub")
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build ferry-hub: %v\n%s", err, output)
	}
	return bin
}

// createConfigMapWork creates work name in the cluster's namespace with one ConfigMap,
// default/installed-<name>.
func createConfigMapWork(t *testing.T, works workclientset.Interface, name string) {
	t.Helper()
	raw := fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"installed-%s","namespace":"default"},"data":{"work":%q}}`, name, name)
	w := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
			{RawExtension: runtime.RawExtension{Raw: raw}},
		}}},
	}
	if _, err := works.WorkV1().ManifestWorks(installedCluster).Create(t.Context(), w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create work %s: %v", name, err)
	}
}

func waitWorkApplied(t *testing.T, works workclientset.Interface, name string) {
	t.Helper()
	waitFor(t, "work "+name+" Applied", podWait, func(ctx context.Context) (bool, error) {
		w, err := works.WorkV1().ManifestWorks(installedCluster).Get(ctx, name, metav1.GetOptions{})
		return err == nil && meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkApplied), nil
	})
}

func configMapUID(t *testing.T, kube kubernetes.Interface, work string) string {
	t.Helper()
	cm, err := kube.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(t.Context(), "installed-"+work, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ConfigMap of work %s: %v", work, err)
	}
	return string(cm.UID)
}

// deliverAppConfig creates a Component and an AppConfig placed on the cluster, whose Deployment runs
// the node's pause image, and waits for the AppConfig's summary to say it is applied and healthy:
// hub → ManifestWork → agent → a pod running on the node → its status back on the hub.
func deliverAppConfig(t *testing.T, dyn dynamic.Interface, kube kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	component := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "core.oam.dev/v1alpha2", "kind": "Component",
		"metadata": map[string]any{"name": "idle", "namespace": "default"},
		"spec": map[string]any{"workload": map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"spec": map[string]any{
				"replicas": int64(1),
				"selector": map[string]any{"matchLabels": map[string]any{"app": "idle"}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"app": "idle"}},
					"spec": map[string]any{"containers": []any{map[string]any{
						"name": "pause", "image": localcluster.PauseImage, "imagePullPolicy": "Never",
					}}},
				},
			},
		}},
	}}
	appConfig := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "core.oam.dev/v1alpha2", "kind": "ApplicationConfiguration",
		"metadata": map[string]any{"name": "idle", "namespace": "default"},
		"spec": map[string]any{
			"placement":  map[string]any{"clusters": []any{installedCluster}},
			"components": []any{map[string]any{"componentName": "idle"}},
		},
	}}
	// As a hub administrator lets a namespace's AppConfigs reach clusters: `clusters add` put the cluster
	// into the ManagedClusterSet default; bound to namespace default, it may be delivered to from there.
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSetBinding",
		"metadata": map[string]any{"name": registration.DefaultClusterSet, "namespace": "default"},
		"spec":     map[string]any{"clusterSet": registration.DefaultClusterSet},
	}}
	bindings := schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1beta2", Resource: "managedclustersetbindings"}
	if _, err := dyn.Resource(bindings).Namespace("default").Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("bind ManagedClusterSet %s to namespace default: %v", registration.DefaultClusterSet, err)
	}
	if _, err := dyn.Resource(appConfigResource.GroupVersion().WithResource("components")).Namespace("default").Create(ctx, component, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Component: %v", err)
	}
	if _, err := dyn.Resource(appConfigResource).Namespace("default").Create(ctx, appConfig, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create AppConfig: %v", err)
	}
	var summary map[string]any
	waitFor(t, "AppConfig idle applied and healthy on "+installedCluster, podWait, func(ctx context.Context) (bool, error) {
		app, err := dyn.Resource(appConfigResource).Namespace("default").Get(ctx, "idle", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		summary, _, _ = unstructured.NestedMap(app.Object, "status", "summary")
		return summary["applied"] == "1/1" && summary["healthy"] == "1/1", nil
	})
	d, err := kube.AppsV1().Deployments("default").Get(ctx, "idle", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the AppConfig's Deployment on the cluster: %v", err)
	}
	if d.Status.ReadyReplicas != 1 {
		t.Errorf("Deployment idle has %d ready replicas while the AppConfig says healthy (summary %v)", d.Status.ReadyReplicas, summary)
	}
}

func agentPods(ctx context.Context, kube kubernetes.Interface) ([]corev1.Pod, error) {
	pods, err := kube.CoreV1().Pods(podinstall.AgentNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=ferry-agent"})
	if err != nil {
		return nil, err
	}
	return pods.Items, nil
}

// logPods logs what the containers of the namespaces' pods wrote, current and previous, for a failure.
func logPods(t *testing.T, kube kubernetes.Interface, namespaces ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, ns := range namespaces {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Logf("list pods in %s: %v", ns, err)
			continue
		}
		t.Logf("pods in %s: %s", ns, podinstall.DescribePods(pods.Items))
		for _, p := range pods.Items {
			for _, previous := range []bool{true, false} {
				logs, err := kube.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Previous: previous}).DoRaw(ctx)
				if err == nil {
					t.Logf("logs of %s/%s (previous: %t):\n%s", ns, p.Name, previous, logs)
				}
			}
		}
	}
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}

// waitFor polls cond every 100ms for up to timeout; on failure it names what it waited for and, when
// given, what state was last seen.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func(context.Context) (bool, error), lastSeen ...func() string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, cond); err != nil {
		seen := ""
		for _, f := range lastSeen {
			seen += "; last seen: " + f()
		}
		t.Fatalf("%s: %v%s", what, err, seen)
	}
}
