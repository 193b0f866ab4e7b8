package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/internal/testing/deployrunner"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/internal/testing/worktest"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// The two clusters of the gRPC test: one runs ferry-agent, the other OCM's own work agent, both over the
// same OCM gRPC server.
const (
	grpcFerryCluster = "grpc-ferry"
	grpcOCMCluster   = "grpc-ocm"
)

// OCM's gRPC server (`server grpc`, open-cluster-management.io/ocm v1.2.0, a test peer) serves the
// ManifestWorks of a hub to agents that never read the hub's API server, with mutual TLS; ferry-agent
// and OCM's own work agent, each started with the klusterlet's grpc arguments for a cluster of its own,
// get the same work created on the hub with a plain client (as kubectl would create it): both apply it,
// the hub's works show the same conditions, feedback and the server's finalizer; an edit on the hub
// reaches both; deleting the works on the hub deletes both objects and, once the agents report the
// works gone, the works themselves.
func TestAgentsOverOCMsGRPCServer(t *testing.T) {
	t.Parallel() // brings clusters of its own: see doc.go
	ocmAgent := ocmPeer(t, "work")
	built := make(chan string, 1)
	go func() { built <- buildBinaries(t, "ferry-agent") }()
	env := localcluster.StartForTest(t, localcluster.Options{
		// A deleted work's objects go with its AppliedManifestWork by the garbage collector.
		Spokes: []localcluster.ClusterSpec{{Name: grpcFerryCluster, ControllerManager: true}, {Name: grpcOCMCluster, ControllerManager: true}},
	})
	ferryBin := <-built
	if t.Failed() {
		t.FailNow()
	}
	ctx := t.Context()
	if err := env.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}
	hubWork, err := workclient.NewForConfig(env.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	logs := logDir(t)
	server := startOCMGRPCServer(t, env.Hub, filepath.Join(logs, "ocm-grpc-server.log"))
	runUntilTestEnds(t, server.ferryAgent(t, ferryBin, env.Spoke(grpcFerryCluster)), "ferry-agent over grpc", filepath.Join(logs, "ferry-agent.log"))
	// Faster than the klusterlet's 60s, so that the test need not wait for OCM's status.
	ocm := server.ocmAgent(t, ocmAgent, env.Spoke(grpcOCMCluster), "--status-sync-interval=1s")
	runUntilTestEnds(t, ocm, "OCM's work agent over grpc", filepath.Join(logs, "ocm-work-agent.log"))

	clusters := []string{grpcFerryCluster, grpcOCMCluster}
	for _, cluster := range clusters {
		if _, err := hubWork.WorkV1().ManifestWorks(cluster).Create(ctx, grpcWork(t, cluster, "hello"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	delivered := func(greeting string) {
		t.Helper()
		for _, cluster := range clusters {
			spoke, err := kubernetes.NewForConfig(env.Spoke(cluster).Config)
			if err != nil {
				t.Fatal(err)
			}
			eventually(t, fmt.Sprintf("%s: greeting %q applied and reported on the hub", cluster, greeting), 2*time.Minute, func(ctx context.Context) (bool, error) {
				cm, err := spoke.CoreV1().ConfigMaps("default").Get(ctx, "grpc-greeting", metav1.GetOptions{})
				if err != nil || cm.Data["greeting"] != greeting {
					return false, nil
				}
				w, err := hubWork.WorkV1().ManifestWorks(cluster).Get(ctx, "grpc-greeting", metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				return grpcReported(w, greeting), nil
			})
		}
	}
	delivered("hello")
	var conditions [][]string
	for _, cluster := range clusters {
		w, err := hubWork.WorkV1().ManifestWorks(cluster).Get(ctx, "grpc-greeting", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(w.Finalizers, workv1.ManifestWorkFinalizer) {
			t.Errorf("%s: the work on the hub has finalizers %v; want the server's %s", cluster, w.Finalizers, workv1.ManifestWorkFinalizer)
		}
		conditions = append(conditions, trueConditions(w))
	}
	if !slices.Equal(conditions[0], conditions[1]) {
		t.Errorf("the work's True conditions on the hub: ferry-agent's %v, OCM's %v; want the same", conditions[0], conditions[1])
	}

	for _, cluster := range clusters {
		w, err := hubWork.WorkV1().ManifestWorks(cluster).Get(ctx, "grpc-greeting", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w.Spec = grpcWork(t, cluster, "bye").Spec
		if _, err := hubWork.WorkV1().ManifestWorks(cluster).Update(ctx, w, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	delivered("bye")

	for _, cluster := range clusters {
		if err := hubWork.WorkV1().ManifestWorks(cluster).Delete(ctx, "grpc-greeting", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, cluster := range clusters {
		spoke, err := kubernetes.NewForConfig(env.Spoke(cluster).Config)
		if err != nil {
			t.Fatal(err)
		}
		// OCM's agent finalizes a deleted work through its requeues (its finalizer controllers back off
		// while the AppliedManifestWork's objects go): on a loaded machine that took more than 2 minutes.
		eventually(t, cluster+": the work's ConfigMap deleted, and the work gone from the hub", 5*time.Minute, func(ctx context.Context) (bool, error) {
			if _, err := spoke.CoreV1().ConfigMaps("default").Get(ctx, "grpc-greeting", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, nil
			}
			_, err := hubWork.WorkV1().ManifestWorks(cluster).Get(ctx, "grpc-greeting", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}
}

// ocmGRPCServer is OCM's gRPC server (`server grpc`, a test peer) in front of a hub's API server, on a
// loopback port, with mutual TLS: a serving certificate for 127.0.0.1, and the authority it trusts for
// agents' client certificates, whose common name is the user it asks the hub about
// (SubjectAccessReviews). Killed, it starts again on the same port.
type ocmGRPCServer struct {
	*ferryProcess
	// Addr is the host:port agents dial.
	Addr string
	hub  kubernetes.Interface
	ca   *localcluster.TestCA
	dir  string
}

// startOCMGRPCServer starts the server for hub until the test ends, its log at logPath, and returns
// once it accepts connections.
func startOCMGRPCServer(t testing.TB, hub *localcluster.Cluster, logPath string) *ocmGRPCServer {
	t.Helper()
	hubKube, err := kubernetes.NewForConfig(hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ca, err := localcluster.NewTestCA(dir, "grpc-test-ca")
	if err != nil {
		t.Fatal(err)
	}
	serverCert, serverKey, err := ca.IssueServer("grpc-server", net.ParseIP("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := deployrunner.FreeLoopbackAddresses(2)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(addrs[0])
	serverConfig := filepath.Join(dir, "server.yaml")
	writeYAML(t, serverConfig, map[string]any{"server_bind_port": port, "tls_cert_file": serverCert, "tls_key_file": serverKey, "client_ca_file": ca.CAFile()})
	p := runUntilTestEnds(t, exec.Command(ocmPeer(t, "server"), "grpc", "--server-config="+serverConfig, "--kubeconfig="+hub.Kubeconfig,
		"--disable-leader-election", "--listen="+addrs[1]), "OCM's gRPC server", logPath)
	s := &ocmGRPCServer{ferryProcess: p, Addr: addrs[0], hub: hubKube, ca: ca, dir: dir}
	worktest.WaitListening(t, "OCM's gRPC server", s.Addr)
	return s
}

// restart starts the server again, on the same port, after kill, and returns once it accepts
// connections.
func (s *ocmGRPCServer) restart() {
	s.t.Helper()
	s.start()
	worktest.WaitListening(s.t, "OCM's gRPC server", s.Addr)
}

// agentConfig writes an agent's config.yaml for cluster, as the klusterlet's registration agent writes
// it for gRPC: the server's URL and CA, the agent's client certificate and key; and grants on the hub
// what OCM grants an agent over gRPC in its cluster's namespace, for the server's
// SubjectAccessReviews. It returns the file's path.
func (s *ocmGRPCServer) agentConfig(t testing.TB, cluster string) string {
	t.Helper()
	user := "system:open-cluster-management:" + cluster + ":agent"
	cert, key, err := s.ca.IssueClient(cluster, user, "system:open-cluster-management:"+cluster)
	if err != nil {
		t.Fatal(err)
	}
	grantGRPCAgent(t, s.hub, cluster, user)
	path := filepath.Join(s.dir, cluster+"-config.yaml")
	writeYAML(t, path, map[string]any{"url": s.Addr, "caFile": s.ca.CAFile(), "clientCertFile": cert, "clientKeyFile": key})
	return path
}

// ferryAgent is ferry-agent of the directory bin for spoke over this server, with the klusterlet's grpc
// arguments (its own flag names for the spoke and its leader election, which a pod would know).
func (s *ocmGRPCServer) ferryAgent(t testing.TB, bin string, spoke *localcluster.Cluster) *exec.Cmd {
	t.Helper()
	return ferryCloudEventsAgent(t, bin, "grpc", s.agentConfig(t, spoke.Name), spoke)
}

// ferryCloudEventsAgent is ferry-agent of the directory bin for spoke over a cloudevents driver (grpc,
// mqtt) with its configuration file, started with the arguments the klusterlet gives its work agent.
func ferryCloudEventsAgent(t testing.TB, bin, driver, config string, spoke *localcluster.Cluster) *exec.Cmd {
	t.Helper()
	health, err := deployrunner.FreeLoopbackAddresses(1)
	if err != nil {
		t.Fatal(err)
	}
	return exec.Command(filepath.Join(bin, "ferry-agent"),
		"--spoke-cluster-name="+spoke.Name,
		"--workload-source-driver="+driver,
		"--workload-source-config="+config,
		"--cloudevents-client-id="+spoke.Name+"-work-agent",
		"--spoke-kubeconfig="+spoke.Kubeconfig,
		"--leader-election-namespace=kube-system",
		"--metrics-bind-address=0", "--health-probe-bind-address="+health[0])
}

// ocmAgent is OCM's work agent (binary) for spoke over this server with the klusterlet's grpc
// arguments, and args after them; as a process here it reaches the spoke through --kubeconfig.
func (s *ocmGRPCServer) ocmAgent(t testing.TB, binary string, spoke *localcluster.Cluster, args ...string) *exec.Cmd {
	t.Helper()
	return ocmWorkAgentCommand(t, binary, spoke, append([]string{
		"--workload-source-driver=grpc",
		"--workload-source-config=" + s.agentConfig(t, spoke.Name),
		"--cloudevents-client-id=" + spoke.Name + "-work-agent",
	}, args...)...)
}

// ocmWorkAgentCommand is OCM's work agent (binary, `agent`) for spoke with args, reaching the spoke
// through --kubeconfig, electing its leader in kube-system and serving its health on a free loopback
// port: what a pod would know from its ServiceAccount, namespace and name.
func ocmWorkAgentCommand(t testing.TB, binary string, spoke *localcluster.Cluster, args ...string) *exec.Cmd {
	t.Helper()
	listen, err := deployrunner.FreeLoopbackAddresses(1)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, append(append([]string{"agent", "--spoke-cluster-name=" + spoke.Name}, args...),
		"--kubeconfig="+spoke.Kubeconfig, "--namespace=kube-system", "--listen="+listen[0])...)
	cmd.Env = []string{"POD_NAME=ocm-work-agent-" + spoke.Name}
	return cmd
}

// ocmPeer is the path of one of OCM's binaries built as Ferry's test peers (`make ocm-peers`).
func ocmPeer(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv(OCMPeersDirEnv)
	if dir == "" {
		dir = filepath.Join(repoRoot(t), "bin", "ocm-peers", "current")
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("OCM's %s, a test peer, is not built (%v): run `make ocm-peers`", name, err)
	}
	return path
}

// grantGRPCAgent lets user, an agent's identity over gRPC, do on the hub what OCM's gRPC server asks on
// its behalf in the cluster's namespace (open-cluster-management.io/sdk-go v1.2.0,
// pkg/cloudevents/server/grpc/authz/kube: subscribe is watch, resync list, a status update updates
// manifestworks/status).
func grantGRPCAgent(t testing.TB, hub kubernetes.Interface, cluster, user string) {
	t.Helper()
	ctx := t.Context()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "grpc-agent", Namespace: cluster}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{workv1.GroupName}, Resources: []string{"manifestworks"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{workv1.GroupName}, Resources: []string{"manifestworks/status"}, Verbs: []string{"update", "patch"}},
	}}
	createNamespace(t, hub, cluster)
	if _, err := hub.RbacV1().Roles(cluster).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "grpc-agent", Namespace: cluster},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
	if _, err := hub.RbacV1().RoleBindings(cluster).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// grpcWork is the test's work for cluster: a ConfigMap with greeting, its greeting fed back.
func grpcWork(t *testing.T, cluster, greeting string) *workv1.ManifestWork {
	t.Helper()
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "grpc-greeting", Namespace: "default"}, Data: map[string]string{"greeting": greeting}}
	raw, err := yaml.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	json, err := yaml.YAMLToJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "grpc-greeting", Namespace: cluster}, Spec: workv1.ManifestWorkSpec{
		Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: json}}}},
		ManifestConfigs: []workv1.ManifestConfigOption{{
			ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "default", Name: "grpc-greeting"},
			FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "greeting", Path: ".data.greeting"}}}},
		}},
	}}
}

// grpcReported says whether w's status on the hub shows its current generation Applied and Available,
// with greeting fed back.
func grpcReported(w *workv1.ManifestWork, greeting string) bool {
	for _, typ := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
		if workreport.WorkStatus(w.Status.Conditions, typ, w.Generation) != metav1.ConditionTrue {
			return false
		}
	}
	for _, m := range w.Status.ResourceStatus.Manifests {
		for _, v := range m.StatusFeedbacks.Values {
			if v.Name == "greeting" && v.Value.String != nil && *v.Value.String == greeting {
				return true
			}
		}
	}
	return false
}

// trueConditions are the types of w's conditions that are True, sorted.
func trueConditions(w *workv1.ManifestWork) []string {
	var out []string
	for _, c := range w.Status.Conditions {
		if c.Status == metav1.ConditionTrue {
			out = append(out, c.Type)
		}
	}
	slices.Sort(out)
	return out
}

// createNamespace creates the namespace name with kube unless it exists.
func createNamespace(t testing.TB, kube kubernetes.Interface, name string) {
	t.Helper()
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// writeYAML writes v to path as YAML.
func writeYAML(t testing.TB, path string, v any) {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
