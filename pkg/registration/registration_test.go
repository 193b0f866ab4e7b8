package registration_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/pkg/agent/process"
	"github.com/ferry-mc/ferry/pkg/hub"
	"github.com/ferry-mc/ferry/pkg/registration"
)

// The hub runs kube-controller-manager: its token controller fills the agent's token Secret, as on
// any real hub.
func startEnv(t *testing.T) *localcluster.Environment {
	t.Helper()
	return localcluster.StartForTest(t, localcluster.Options{
		Hub:    localcluster.ClusterSpec{Name: "hub", ControllerManager: true},
		Spokes: []localcluster.ClusterSpec{{Name: "spoke"}},
	})
}

func credentialConfig(t *testing.T, cred *registration.Credential) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(cred.Kubeconfig)
	if err != nil {
		t.Fatalf("the credential's kubeconfig: %v", err)
	}
	return cfg
}

// What `clusters add` gives an agent reaches its own cluster's namespace, only for what
// deploy/agent/hub-clusterrole.yaml allows, and nothing of another cluster's.
func TestAddGivesACredentialLimitedToTheClusterNamespace(t *testing.T) {
	e := startEnv(t)
	ctx := t.Context()
	c1, err := registration.Add(ctx, e.Hub.Config, registration.AddOptions{Name: "c1", Labels: map[string]string{"env": "prod"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := registration.Add(ctx, e.Hub.Config, registration.AddOptions{Name: "c2"}); err != nil {
		t.Fatal(err)
	}
	mc, err := clusterclient.NewForConfigOrDie(e.Hub.Config).ClusterV1().ManagedClusters().Get(ctx, "c1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !mc.Spec.HubAcceptsClient || mc.Labels["env"] != "prod" || mc.Labels[registration.RegisteredByLabel] != registration.RegisteredByFerry {
		t.Errorf("ManagedCluster c1: hubAcceptsClient %v, labels %v", mc.Spec.HubAcceptsClient, mc.Labels)
	}

	cfg := credentialConfig(t, c1)
	works := workclient.NewForConfigOrDie(cfg).WorkV1()
	kube := kubernetes.NewForConfigOrDie(cfg)
	if _, err := works.ManifestWorks("c1").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("c1's agent lists c1's ManifestWorks: %v", err)
	}
	lease, err := kube.CoordinationV1().Leases("c1").Get(ctx, registration.LeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("c1's agent reads its Lease: %v", err)
	}
	lease.Spec.RenewTime = ptr.To(metav1.NowMicro())
	if _, err := kube.CoordinationV1().Leases("c1").Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Errorf("c1's agent renews its Lease: %v", err)
	}
	// Its own ManagedCluster: read it, and patch its status, where it reports the cluster's claims.
	agentClusters := clusterclient.NewForConfigOrDie(cfg).ClusterV1().ManagedClusters()
	if _, err := agentClusters.Get(ctx, "c1", metav1.GetOptions{}); err != nil {
		t.Errorf("c1's agent reads its ManagedCluster: %v", err)
	}
	claims := []byte(`{"status":{"clusterClaims":[{"name":"id.k8s.io","value":"c1"}]}}`)
	if _, err := agentClusters.Patch(ctx, "c1", types.MergePatchType, claims, metav1.PatchOptions{}, "status"); err != nil {
		t.Errorf("c1's agent patches its ManagedCluster's status: %v", err)
	}
	refused := map[string]error{}
	_, refused["patch c2's ManagedCluster status"] = agentClusters.Patch(ctx, "c2", types.MergePatchType, claims, metav1.PatchOptions{}, "status")
	_, refused["patch its ManagedCluster's spec"] = agentClusters.Patch(ctx, "c1", types.MergePatchType, []byte(`{"spec":{"hubAcceptsClient":false}}`), metav1.PatchOptions{})
	_, refused["get c2's ManagedCluster"] = agentClusters.Get(ctx, "c2", metav1.GetOptions{})
	_, refused["list c2's ManifestWorks"] = works.ManifestWorks("c2").List(ctx, metav1.ListOptions{})
	_, refused["get c2's Lease"] = kube.CoordinationV1().Leases("c2").Get(ctx, registration.LeaseName, metav1.GetOptions{})
	_, refused["list Secrets of c1"] = kube.CoreV1().Secrets("c1").List(ctx, metav1.ListOptions{})
	_, refused["list ManagedClusters"] = clusterclient.NewForConfigOrDie(cfg).ClusterV1().ManagedClusters().List(ctx, metav1.ListOptions{})
	refused["delete a ManifestWork of c1"] = works.ManifestWorks("c1").Delete(ctx, "any", metav1.DeleteOptions{})
	for what, err := range refused {
		if !apierrors.IsForbidden(err) {
			t.Errorf("c1's agent may %s: got %v, want Forbidden", what, err)
		}
	}
}

// Adding again changes nothing and gives the same credential; a ManagedCluster someone else registered
// is refused and left alone; removing revokes the credential and takes what add made.
func TestAddIsIdempotentRefusesOthersClustersAndRemoveRevokes(t *testing.T) {
	e := startEnv(t)
	ctx := t.Context()
	first, err := registration.Add(ctx, e.Hub.Config, registration.AddOptions{Name: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := registration.Add(ctx, e.Hub.Config, registration.AddOptions{Name: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if string(first.Kubeconfig) != string(again.Kubeconfig) {
		t.Error("adding c1 again gave another credential; the agent running with the first would lose its hub")
	}

	clusters := clusterclient.NewForConfigOrDie(e.Hub.Config).ClusterV1().ManagedClusters()
	ocm := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "joined"}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
	if _, err := clusters.Create(ctx, ocm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(e.Hub.Config)
	if _, err := registration.Add(ctx, e.Hub.Config, registration.AddOptions{Name: "joined"}); err == nil || !strings.Contains(err.Error(), "not registered by ferry-hub") {
		t.Errorf("add over a clusteradm-joined cluster: %v, want a refusal", err)
	}
	if _, err := kube.CoreV1().Namespaces().Get(ctx, "joined", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused add made the namespace: %v", err)
	}
	if err := registration.Remove(ctx, e.Hub.Config, "joined"); err == nil {
		t.Error("remove of a clusteradm-joined cluster: no error, want a refusal")
	}
	if _, err := clusters.Get(ctx, "joined", metav1.GetOptions{}); err != nil {
		t.Errorf("a refused remove touched the ManagedCluster: %v", err)
	}

	agentKube := kubernetes.NewForConfigOrDie(credentialConfig(t, first))
	if err := registration.Remove(ctx, e.Hub.Config, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := clusters.Get(ctx, "c1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ManagedCluster c1 after remove: %v, want gone", err)
	}
	// The namespace terminates (the hub's namespace controller empties it); the token stops working
	// once its ServiceAccount is gone.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := agentKube.CoordinationV1().Leases("c1").Get(ctx, registration.LeaseName, metav1.GetOptions{})
		return apierrors.IsUnauthorized(err), nil
	})
	if err != nil {
		t.Errorf("c1's token still authenticates after remove: %v", err)
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Get(ctx, registration.AgentClusterStatusRole("c1"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the agent's ClusterRoleBinding on its ManagedCluster after remove: %v, want gone", err)
	}
	if err := registration.Remove(ctx, e.Hub.Config, "c1"); err != nil {
		t.Errorf("removing c1 twice: %v, want nothing to do", err)
	}
}

// The credential lands on the managed cluster as the Secret deploy/agent/spoke mounts; a
// hub-kubeconfig-secret that a klusterlet wrote is never replaced or deleted.
func TestCredentialOnTheSpokeNeverReplacesAKlusterletSecret(t *testing.T) {
	e := startEnv(t)
	ctx := t.Context()
	cred, err := registration.Add(ctx, e.Hub.Config, registration.AddOptions{Name: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	spoke := e.Spoke("spoke")
	if err := cred.ApplyToSpoke(ctx, spoke.Config, registration.DefaultAgentNamespace); err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(spoke.Config)
	s, err := kube.CoreV1().Secrets(registration.DefaultAgentNamespace).Get(ctx, registration.HubKubeconfigSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(s.Data["cluster-name"]) != "c1" || string(s.Data["kubeconfig"]) != string(cred.Kubeconfig) {
		t.Errorf("Secret on the spoke holds cluster-name %q and another kubeconfig", s.Data["cluster-name"])
	}

	klusterlet := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: registration.HubKubeconfigSecret, Namespace: "open-cluster-management-agent"},
		Data: map[string][]byte{"kubeconfig": []byte("the klusterlet's")}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: klusterlet.Namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Secrets(klusterlet.Namespace).Create(ctx, klusterlet, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cred.ApplyToSpoke(ctx, spoke.Config, klusterlet.Namespace); err == nil {
		t.Error("writing over the klusterlet's Secret: no error")
	}
	if err := registration.RemoveFromSpoke(ctx, spoke.Config, klusterlet.Namespace); err == nil {
		t.Error("removing the klusterlet's Secret: no error")
	}
	if s, err := kube.CoreV1().Secrets(klusterlet.Namespace).Get(ctx, klusterlet.Name, metav1.GetOptions{}); err != nil || string(s.Data["kubeconfig"]) != "the klusterlet's" {
		t.Errorf("the klusterlet's Secret changed: %v", err)
	}
	if err := registration.RemoveFromSpoke(ctx, spoke.Config, registration.DefaultAgentNamespace); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Secrets(registration.DefaultAgentNamespace).Get(ctx, registration.HubKubeconfigSecret, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Ferry's Secret after RemoveFromSpoke: %v, want gone", err)
	}
}

// The whole loop on real parts: a cluster added with a 1s lease, its real agent running with the
// credential, and the hub's availability controller: Joined and Available True while the agent runs,
// Available Unknown within the grace after it stops, and no status write while nothing changes.
func TestAgentLeaseMakesTheClusterAvailableAndItsStopUnknown(t *testing.T) {
	e := startEnv(t)
	ctx := t.Context()
	cred, err := registration.Add(ctx, e.Hub.Config, registration.AddOptions{Name: "c1", LeaseDurationSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	statusWrites := startAvailabilityController(t, e.Hub.Config)

	stopAgent := runAgent(t, e, cred)

	clusters := clusterclient.NewForConfigOrDie(e.Hub.Config).ClusterV1().ManagedClusters()
	waitForCondition := func(what string, timeout time.Duration, want map[string]metav1.ConditionStatus) *clusterv1.ManagedCluster {
		t.Helper()
		var mc *clusterv1.ManagedCluster
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			var err error
			if mc, err = clusters.Get(ctx, "c1", metav1.GetOptions{}); err != nil {
				return false, err
			}
			for typ, status := range want {
				if !meta.IsStatusConditionPresentAndEqual(mc.Status.Conditions, typ, status) {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("%s: %v; conditions %+v", what, err, mc.Status.Conditions)
		}
		return mc
	}
	waitForCondition("c1 joined and available", 30*time.Second, map[string]metav1.ConditionStatus{
		clusterv1.ManagedClusterConditionHubAccepted: metav1.ConditionTrue,
		clusterv1.ManagedClusterConditionJoined:      metav1.ConditionTrue,
		clusterv1.ManagedClusterConditionAvailable:   metav1.ConditionTrue,
	})

	// Renewals every second keep it Available without a status write.
	before := statusWrites.Load()
	renewals := leaseRenewals(t, e.Hub.Config, 3)
	if w := statusWrites.Load() - before; w != 0 {
		t.Errorf("%d status writes while the agent renewed %d times and nothing changed; want 0", w, renewals)
	}

	stopAgent()
	stopped := time.Now()
	mc := waitForCondition("c1 Unknown after its agent stopped", 30*time.Second, map[string]metav1.ConditionStatus{
		clusterv1.ManagedClusterConditionJoined:    metav1.ConditionTrue,
		clusterv1.ManagedClusterConditionAvailable: metav1.ConditionUnknown,
	})
	c := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
	if c.Reason != "ManagedClusterLeaseUpdateStopped" || !strings.Contains(c.Message, "has not renewed") {
		t.Errorf("Available Unknown says %s: %s", c.Reason, c.Message)
	}
	t.Logf("Available Unknown %s after the agent stopped (lease 1s, grace %ds)", time.Since(stopped).Round(100*time.Millisecond), registration.LeaseGraceTimes)
}

// runAgent runs ferry-agent's process for the spoke with cred, as deploy/agent/spoke runs it, until
// the test ends or the function returned is called.
func runAgent(t *testing.T, e *localcluster.Environment, cred *registration.Credential) (stop func()) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "hub-kubeconfig")
	if err := cred.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	o := process.NewOptions()
	o.HubKubeconfigDir = dir
	o.SpokeKubeconfig = e.Spoke("spoke").Kubeconfig
	o.MetricsBindAddress, o.HealthProbeBindAddress = "0", "0"
	o.LeaderElectionNamespace = "kube-system"
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- process.Run(ctx, o) }()
	stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	})
	t.Cleanup(stop)
	return stop
}

// On a cluster `clusters add` registered, no registration agent runs: ferry-agent reports the spoke's
// ClusterClaims in the ManagedCluster's status as OCM's registration agent would — the reserved ones
// first, then the others by name, none marked spoke-only — follows their changes, and writes nothing
// while they do not change.
func TestAgentReportsTheClustersClaimsWhereFerryRegisteredIt(t *testing.T) {
	e := startEnv(t)
	ctx := t.Context()
	cred, err := registration.Add(ctx, e.Hub.Config, registration.AddOptions{Name: "c1", LeaseDurationSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	spokeClaims := clusterclient.NewForConfigOrDie(e.Spoke("spoke").Config).ClusterV1alpha1().ClusterClaims()
	claim := func(name, value string, labels map[string]string) {
		t.Helper()
		c := &clusterv1alpha1.ClusterClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: clusterv1alpha1.ClusterClaimSpec{Value: value}}
		if _, err := spokeClaims.Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	claim("region.example.com", "eu", nil)
	claim("id.k8s.io", "c1-4f2a", nil)
	claim("secret.example.com", "spoke only", map[string]string{"open-cluster-management.io/spoke-only": ""})
	writes := countStatusWrites(t, e.Hub.Config, "c1")
	runAgent(t, e, cred)

	clusters := clusterclient.NewForConfigOrDie(e.Hub.Config).ClusterV1().ManagedClusters()
	waitClaims := func(what, want string) {
		t.Helper()
		var got string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			mc, err := clusters.Get(ctx, "c1", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			got = fmt.Sprint(mc.Status.ClusterClaims)
			return got == want, nil
		})
		if err != nil {
			t.Fatalf("%s: claims %s, want %s: %v", what, got, want, err)
		}
	}
	waitClaims("the spoke's claims reported", "[{id.k8s.io c1-4f2a} {region.example.com eu}]")
	c, err := spokeClaims.Get(ctx, "region.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.Value = "us"
	if _, err := spokeClaims.Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitClaims("a changed claim followed", "[{id.k8s.io c1-4f2a} {region.example.com us}]")

	// Nothing changes: nothing is written. The Lease renewals of the same agent go on meanwhile.
	before := writes.Load()
	leaseRenewals(t, e.Hub.Config, 2)
	if w := writes.Load() - before; w != 0 {
		t.Errorf("%d writes of c1's status while its claims did not change; want 0", w)
	}
	if before != 2 {
		t.Errorf("%d writes of c1's status for one report and one change; want 2", before)
	}
}

// countStatusWrites counts, from now on, the writes of cluster's ManagedCluster status on the hub, by
// watching it.
func countStatusWrites(t *testing.T, hubConfig *rest.Config, cluster string) *atomic.Int64 {
	var writes atomic.Int64
	lw := cache.NewListWatchFromClient(clusterclient.NewForConfigOrDie(hubConfig).ClusterV1().RESTClient(), "managedclusters", "",
		fields.OneTermEqualSelector("metadata.name", cluster))
	_, informer := cache.NewInformerWithOptions(cache.InformerOptions{ListerWatcher: lw, ObjectType: &clusterv1.ManagedCluster{},
		Handler: cache.ResourceEventHandlerFuncs{UpdateFunc: func(old, mc any) {
			if !reflect.DeepEqual(old.(*clusterv1.ManagedCluster).Status, mc.(*clusterv1.ManagedCluster).Status) {
				writes.Add(1)
			}
		}}})
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go informer.Run(stop)
	if !cache.WaitForCacheSync(stop, informer.HasSynced) {
		t.Fatal("the watch of ManagedCluster " + cluster + " did not sync")
	}
	return &writes
}

// leaseRenewals waits until the agent renewed c1's Lease n more times and returns n.
func leaseRenewals(t *testing.T, hub *rest.Config, n int) int {
	t.Helper()
	leases := kubernetes.NewForConfigOrDie(hub).CoordinationV1().Leases("c1")
	var last time.Time
	seen := -1
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Duration(n+5)*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, registration.LeaseName, metav1.GetOptions{})
		if err != nil || l.Spec.RenewTime == nil {
			return false, err
		}
		if !l.Spec.RenewTime.Time.Equal(last) {
			last = l.Spec.RenewTime.Time
			seen++
		}
		return seen >= n, nil
	})
	if err != nil {
		t.Fatalf("the agent renewed its Lease %d times, want %d: %v", seen, n, err)
	}
	return n
}

// startAvailabilityController runs the hub's controllers as ferry-hub does and counts the status
// writes to ManagedClusters.
func startAvailabilityController(t *testing.T, hubConfig *rest.Config) *atomic.Int64 {
	t.Helper()
	var writes atomic.Int64
	cfg := rest.CopyConfig(hubConfig)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet && strings.Contains(req.URL.Path, "/managedclusters/") && strings.HasSuffix(req.URL.Path, "/status") {
				writes.Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	scheme, err := hub.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&hub.ClusterAvailabilityReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("hub manager: %v", err)
		}
	})
	return &writes
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A new cluster joins OCM's set default (made if missing, of OCM's exclusive label), or the set asked
// for; adding a registered cluster again keeps the set it is in unless another is asked for.
func TestAddPutsTheClusterIntoAClusterSet(t *testing.T) {
	e := startEnv(t)
	ctx := t.Context()
	clusters := clusterclient.NewForConfigOrDie(e.Hub.Config)
	setOf := func(name string) string {
		t.Helper()
		mc, err := clusters.ClusterV1().ManagedClusters().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return mc.Labels[clusterv1beta2.ClusterSetLabel]
	}
	cred, err := registration.Add(ctx, e.Hub.Config, registration.AddOptions{Name: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := setOf("c1"); got != registration.DefaultClusterSet || cred.ClusterSet != got {
		t.Errorf("c1 is in set %q (credential says %q), want %q", got, cred.ClusterSet, registration.DefaultClusterSet)
	}
	set, err := clusters.ClusterV1beta2().ManagedClusterSets().Get(ctx, registration.DefaultClusterSet, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the set c1 joined: %v", err)
	}
	if typ := set.Spec.ClusterSelector.SelectorType; typ != clusterv1beta2.ExclusiveClusterSetLabel {
		t.Errorf("set %s selects by %q, want OCM's exclusive label", set.Name, typ)
	}

	if _, err := registration.Add(ctx, e.Hub.Config, registration.AddOptions{Name: "c2", ClusterSet: "team-a"}); err != nil {
		t.Fatal(err)
	}
	if got := setOf("c2"); got != "team-a" {
		t.Errorf("c2 is in set %q, want team-a", got)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSets().Get(ctx, "team-a", metav1.GetOptions{}); err != nil {
		t.Errorf("the set team-a was not made: %v", err)
	}
	again, err := registration.Add(ctx, e.Hub.Config, registration.AddOptions{Name: "c2"})
	if err != nil {
		t.Fatal(err)
	}
	if got := setOf("c2"); got != "team-a" || again.ClusterSet != "team-a" {
		t.Errorf("adding c2 again moved it to set %q (credential says %q), want it kept in team-a", got, again.ClusterSet)
	}
	if _, err := registration.Add(ctx, e.Hub.Config, registration.AddOptions{Name: "c2", ClusterSet: "team-b"}); err != nil {
		t.Fatal(err)
	}
	if got := setOf("c2"); got != "team-b" {
		t.Errorf("c2 asked into team-b is in %q", got)
	}
}
