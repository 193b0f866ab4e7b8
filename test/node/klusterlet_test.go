package node

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	clusterclientset "open-cluster-management.io/api/client/cluster/clientset/versioned"
	operatorclientset "open-cluster-management.io/api/client/operator/clientset/versioned"
	workclientset "open-cluster-management.io/api/client/work/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	operatorv1 "open-cluster-management.io/api/operator/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/internal/testing/childproc"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/internal/testing/podinstall"
)

// ocmPeersDirEnv names the directory of OCM's own binaries built as Ferry's test peers
// (hack/tools/build-ocm-peers.sh, `make ocm-peers`); the Makefile sets it. Without it they are looked
// for in bin/ocm-peers/current of this checkout.
const ocmPeersDirEnv = "FERRY_OCM_PEERS_DIR"

// OCM's images as this test builds them from the peers: under the names `clusteradm join
// --image-registry ferry.io/ocm` makes the klusterlet run (<registry>/<component>:<bundle version>).
const (
	ocmRegistry          = "ferry.io/ocm"
	ocmTag               = "v1.2.0"
	ocmOperatorImage     = ocmRegistry + "/registration-operator:" + ocmTag
	ocmRegistrationImage = ocmRegistry + "/registration:" + ocmTag
	ocmWorkImage         = ocmRegistry + "/work:" + ocmTag
	// ferryAgentImage is the image deploy/agent/spoke runs, which a user names as the klusterlet's work
	// image (values file images.overrides.workImage).
	ferryAgentImage = "ferry.io/ferry-agent:dev"
	// ocmUser is the user of OCM's own images: the klusterlet's pods set runAsNonRoot without a user.
	ocmUser = "10001"
)

// Where the klusterlet puts things (OCM v1.2.0, Default mode).
const (
	ocmOperatorNamespace = "open-cluster-management"
	ocmAgentNamespace    = "open-cluster-management-agent"
	ocmHubNamespace      = "open-cluster-management-hub"
	ocmWorkDeployment    = "klusterlet-work-agent"
	ocmRegDeployment     = "klusterlet-registration-agent"
	ocmWorkLease         = "work-agent-lock"
)

// The clusteradm path: OCM's own klusterlet operator and registration agent (v1.2.0, built from the
// module proxy as images with OCM's layout) installed on the cluster's real node as `clusteradm join`
// installs them — OCM's own chart, rendered by OCM's own function with clusteradm's default
// configuration — with Ferry's agent image as the klusterlet's work image. On the hub side, what
// `clusteradm init` and `accept` do: the bootstrap ServiceAccount, OCM's hub registration controller (as
// a process: the cluster-manager operator's other parts are not needed), the CSR approved and the
// cluster accepted. The operator must then run Ferry's agent beside OCM's registration agent, under
// OCM's own RBAC (klusterlet-work-sa is not cluster-admin) and with the hub credential OCM's
// registration obtained and keeps (a client certificate from the approved CSR), and that agent must
// apply and report a work. As in TestFerryInstalledFromDeploy, the cluster is its own hub
// ("local-cluster").
func TestClusteradmJoinRunsFerrysAgent(t *testing.T) {
	testClusteradmJoin(t, false)
}

// The same over OCM's gRPC transport: the hub as `clusteradm init --registration-drivers csr,grpc
// --grpc-server S` sets it up — OCM's gRPC server (`server grpc`, as a process, as the cluster-manager
// operator runs it in a pod) in front of the hub, its serving certificate and the authority that signs
// the agents' client certificates (the hub registration controller's --grpc-ca-file and --grpc-key-file)
// — and the klusterlet joined with `--registration-auth grpc --grpc-server S` (registrationDriver.authType
// grpc). Neither of the klusterlet's agents then reads the hub's API server for its cluster: the
// registration agent registers, renews its lease and gets its certificate through the server, and the
// operator starts the work agent — Ferry's image — with --workload-source-driver=grpc and the
// config.yaml the registration agent wrote. Ferry's agent must apply and report the work through the
// server, and hand over to OCM's work image and back without re-creating anything.
func TestClusteradmJoinOverGRPCRunsFerrysAgent(t *testing.T) {
	testClusteradmJoin(t, true)
}

func testClusteradmJoin(t *testing.T, overGRPC bool) {
	ctx := t.Context()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	peers := ocmPeersDir(t, root)
	images := t.TempDir()
	if err := podinstall.BuildImages(ctx, root, images); err != nil {
		t.Fatal(err)
	}
	for image, binaries := range map[string][]string{
		ocmOperatorImage:     {filepath.Join(peers, "registration-operator")},
		ocmRegistrationImage: {filepath.Join(peers, "registration")},
		ocmWorkImage:         {filepath.Join(peers, "work")},
	} {
		archive := filepath.Join(images, filepath.Base(strings.Split(image, ":")[0])+".tar")
		if err := localcluster.WriteImage(archive, localcluster.ImageSpec{Tag: image, Binaries: binaries, User: ocmUser}); err != nil {
			t.Fatal(err)
		}
	}

	env := localcluster.StartForTest(t, localcluster.Options{Hub: localcluster.ClusterSpec{Name: "hub", RealNode: true}})
	c := env.Hub
	for _, archive := range []string{"ferry-agent.tar", "registration-operator.tar", "registration.tar", "work.tar"} {
		if err := c.RealNode.ImportImage(ctx, filepath.Join(images, archive)); err != nil {
			t.Fatal(err)
		}
	}
	kube := kubernetes.NewForConfigOrDie(c.Config)
	clusters := clusterclientset.NewForConfigOrDie(c.Config)
	works := workclientset.NewForConfigOrDie(c.Config)
	operators := operatorclientset.NewForConfigOrDie(c.Config)
	in := &podinstall.Installer{Cluster: c, Log: t.Logf}
	rendered := t.TempDir()
	t.Cleanup(func() {
		if t.Failed() {
			logPods(t, kube, ocmOperatorNamespace, ocmAgentNamespace)
		}
		// The operator re-creates what the node's drain deletes: stop it first.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = kube.AppsV1().Deployments(ocmOperatorNamespace).Delete(ctx, "klusterlet", metav1.DeleteOptions{})
	})

	// clusteradm init: OCM's hub CRDs and bootstrap credential; OCM's hub registration controller. The
	// local cluster starts with Ferry's copies of some of these CRDs: OCM's own (v1.2.0) replace them.
	if err := in.Kubectl(ctx, "apply", "--server-side", "--force-conflicts", "-f", filepath.Join(peers, "hub-crds")); err != nil {
		t.Fatal(err)
	}
	renderOCM(t, peers, "init", "--out-dir", rendered)
	if err := in.Kubectl(ctx, "apply", "-f", filepath.Join(rendered, "hub-bootstrap.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ocmHubNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bootstrap := filepath.Join(rendered, "bootstrap-kubeconfig")
	token := writeBootstrapKubeconfig(t, kube, c, bootstrap)
	// clusteradm join --cluster-name local-cluster --image-registry ferry.io/ocm, with Ferry's agent as
	// the work image.
	join := []string{"join", "--out-dir", rendered, "--cluster-name", installedCluster, "--bootstrap-kubeconfig", bootstrap,
		"--image-registry", ocmRegistry, "--tag", ocmTag, "--work-image", ferryAgentImage}
	var grpcServer string
	if overGRPC {
		signer, err := localcluster.NewTestCA(t.TempDir(), "ocm-grpc-signer")
		if err != nil {
			t.Fatal(err)
		}
		startHubRegistration(t, peers, c, clusters, "--enabled-registration-drivers=csr,grpc",
			"--grpc-ca-file="+signer.CAFile(), "--grpc-key-file="+signer.KeyFile())
		grpcServer = startGRPCServer(t, peers, c, signer)
		// What clusteradm join --registration-auth grpc --grpc-server writes beside the bootstrap
		// kubeconfig: the server, the hub's CA for it, the bootstrap token.
		caPEM, err := os.ReadFile(signer.CAFile())
		if err != nil {
			t.Fatal(err)
		}
		grpcConfig := filepath.Join(rendered, "bootstrap-grpc-config.yaml")
		data, err := yaml.Marshal(map[string]any{"url": grpcServer, "caData": caPEM, "token": token})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(grpcConfig, data, 0o600); err != nil {
			t.Fatal(err)
		}
		join = append(join, "--registration-auth", "grpc", "--grpc-config", grpcConfig)
	} else {
		startHubRegistration(t, peers, c, clusters)
	}
	renderOCM(t, peers, join...)
	joined := time.Now()
	if err := in.Kubectl(ctx, "apply", "-f", filepath.Join(rendered, "crds.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := in.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=1m", "crd/klusterlets.operator.open-cluster-management.io"); err != nil {
		t.Fatal(err)
	}
	if err := in.Kubectl(ctx, "apply", "-f", filepath.Join(rendered, "klusterlet.yaml")); err != nil {
		t.Fatal(err)
	}

	// clusteradm accept: approve the registration agent's CSR, accept the cluster.
	var csr *certificatesv1.CertificateSigningRequest
	waitFor(t, "OCM's registration agent asks for a hub certificate (a CSR labelled with the cluster's name)", podWait, func(ctx context.Context) (bool, error) {
		list, err := kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: clusterv1.ClusterNameLabelKey + "=" + installedCluster})
		if err != nil || len(list.Items) == 0 {
			return false, nil
		}
		csr = &list.Items[0]
		return true, nil
	})
	t.Logf("CSR %s from %s, %s after the join", csr.Name, csr.Spec.Username, time.Since(joined).Round(time.Millisecond))
	// Over gRPC the server creates the CSR for the agent it authenticated, and names that agent in an
	// annotation; the signer is then OCM's gRPC signer, which the hub registration controller serves.
	maker, signerName := csr.Spec.Username, certificatesv1.KubeAPIServerClientSignerName
	if overGRPC {
		maker, signerName = csr.Annotations[operatorv1.CSRUsernameAnnotation], operatorv1.GRPCAuthSigner
	}
	if want := "system:serviceaccount:" + ocmOperatorNamespace + ":agent-registration-bootstrap"; maker != want {
		t.Errorf("CSR %s made by %q, want the bootstrap ServiceAccount %s", csr.Name, maker, want)
	}
	if csr.Spec.SignerName != signerName {
		t.Errorf("CSR %s is for signer %s, want %s", csr.Name, csr.Spec.SignerName, signerName)
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
		Reason: "AutoApprovedByClusteradm", Message: "Approved by clusteradm accept (Ferry's test)",
	})
	if _, err := kube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ManagedCluster "+installedCluster+" created by the registration agent", podWait, func(ctx context.Context) (bool, error) {
		_, err := clusters.ClusterV1().ManagedClusters().Get(ctx, installedCluster, metav1.GetOptions{})
		return err == nil, nil
	})
	// Joined, not yet accepted: the registration agent has its certificate, so the operator starts the
	// work agent, whose credential the hub knows but lets do nothing yet. Ferry's agent waits for its
	// role there, as OCM's does, instead of exiting into CrashLoopBackOff.
	var waiting *corev1.Pod
	waitingSign := "waiting for the hub to grant this cluster's role"
	if overGRPC {
		// Over gRPC the server asks the hub whether the agent may watch its cluster's works, and refuses
		// the subscription until the cluster is accepted; sdk-go's client subscribes again with backoff.
		waitingSign = "PermissionDenied"
	}
	waitFor(t, "Ferry's agent, started before the cluster is accepted, says it waits for its role on the hub", podWait, func(ctx context.Context) (bool, error) {
		pods, err := kube.CoreV1().Pods(ocmAgentNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=klusterlet-manifestwork-agent"})
		if err != nil {
			return false, nil
		}
		for i := range pods.Items {
			logs, err := kube.CoreV1().Pods(ocmAgentNamespace).GetLogs(pods.Items[i].Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			if err == nil && strings.Contains(string(logs), waitingSign) {
				waiting = &pods.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	if _, err := clusters.ClusterV1().ManagedClusters().Patch(ctx, installedCluster, types.MergePatchType, []byte(`{"spec":{"hubAcceptsClient":true}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	accepted := time.Now()

	// What the operator runs: Ferry's agent as the work agent, OCM's registration agent beside it.
	workPod, err := in.WaitDeploymentReady(ctx, ocmAgentNamespace, ocmWorkDeployment)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s Ready %s after the cluster was accepted (its pod created after %s)", ocmWorkDeployment,
		time.Since(accepted).Round(time.Millisecond), workPod.CreationTimestamp.Sub(accepted).Round(time.Second))
	regPod, err := in.WaitDeploymentReady(ctx, ocmAgentNamespace, ocmRegDeployment)
	if err != nil {
		t.Fatal(err)
	}
	if workPod.UID != waiting.UID || restarts(workPod) != 0 {
		t.Errorf("the work agent's pod %s (%d restarts) is not the one that waited for acceptance, %s: it should have started working without a restart",
			workPod.Name, restarts(workPod), waiting.Name)
	}
	work := workPod.Spec.Containers[0]
	if work.Image != ferryAgentImage || workPod.Spec.ServiceAccountName != "klusterlet-work-sa" || len(work.Args) < 2 || work.Args[0] != "/work" || work.Args[1] != "agent" {
		t.Errorf("the klusterlet's work agent runs image %s as %s with args %q; want %s as klusterlet-work-sa with /work agent …",
			work.Image, workPod.Spec.ServiceAccountName, work.Args, ferryAgentImage)
	}
	driver := "--workload-source-driver=kube"
	if overGRPC {
		driver = "--workload-source-driver=grpc"
	}
	if !slices.Contains(work.Args, driver) {
		t.Errorf("the klusterlet's work agent runs with args %q; want %s", work.Args, driver)
	}
	if reg := regPod.Spec.Containers[0]; reg.Image != ocmRegistrationImage {
		t.Errorf("the klusterlet's registration agent runs %s, want OCM's %s", reg.Image, ocmRegistrationImage)
	}
	waitFor(t, "Ferry's agent pod holds the Lease "+ocmWorkLease, podWait, func(ctx context.Context) (bool, error) {
		lease, err := kube.CoordinationV1().Leases(ocmAgentNamespace).Get(ctx, ocmWorkLease, metav1.GetOptions{})
		return err == nil && strings.HasPrefix(ptr.Deref(lease.Spec.HolderIdentity, ""), workPod.Name+"_"), nil
	})

	t.Run("the cluster joins", func(t *testing.T) {
		waitFor(t, "ManagedCluster "+installedCluster+" accepted, joined and available", podWait, func(ctx context.Context) (bool, error) {
			mc, err := clusters.ClusterV1().ManagedClusters().Get(ctx, installedCluster, metav1.GetOptions{})
			return err == nil &&
				meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted) &&
				meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined) &&
				meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable), nil
		})
		secret, err := kube.CoreV1().Secrets(ocmAgentNamespace).Get(ctx, "hub-kubeconfig-secret", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		keys := []string{"kubeconfig", "tls.crt", "tls.key", "cluster-name"}
		if overGRPC {
			// What the work agent reads over gRPC (--workload-source-config): the server, its CA, and
			// the client certificate beside it.
			keys = append(keys, "config.yaml")
		}
		for _, key := range keys {
			if len(secret.Data[key]) == 0 {
				t.Errorf("hub-kubeconfig-secret has no %s: the registration agent's certificate was not issued", key)
			}
		}
	})

	t.Run("Ferry's agent applies and reports a work under OCM's RBAC", func(t *testing.T) {
		createKlusterletWork(t, works, "ferry-agent")
		w := waitKlusterletWork(t, works)
		for _, m := range w.Status.ResourceStatus.Manifests {
			if !meta.IsStatusConditionTrue(m.Conditions, workv1.ManifestApplied) || !meta.IsStatusConditionTrue(m.Conditions, workv1.ManifestAvailable) {
				t.Errorf("manifest %s %s/%s: conditions %v; want Applied and Available", m.ResourceMeta.Kind, m.ResourceMeta.Namespace, m.ResourceMeta.Name, m.Conditions)
			}
		}
		waitFor(t, "the work's Deployment klusterlet-hello/idle ready on the node", podWait, func(ctx context.Context) (bool, error) {
			d, err := kube.AppsV1().Deployments("klusterlet-hello").Get(ctx, "idle", metav1.GetOptions{})
			return err == nil && d.Status.ReadyReplicas == 1, nil
		})
		// The AppliedManifestWork carries the klusterlet's UID as its agent ID (--agent-id), as OCM's
		// own work agent's would.
		klusterlet, err := operators.OperatorV1().Klusterlets().Get(ctx, "klusterlet", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		applied, err := works.WorkV1().AppliedManifestWorks().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var agentIDs, names []string
		for _, a := range applied.Items {
			if a.Spec.ManifestWorkName == klusterletWork {
				agentIDs = append(agentIDs, a.Spec.AgentID)
				names = append(names, a.Name)
			}
		}
		if !slices.Equal(agentIDs, []string{string(klusterlet.GetUID())}) {
			t.Errorf("AppliedManifestWorks of %s have agent IDs %q, want the Klusterlet's UID %s", klusterletWork, agentIDs, klusterlet.GetUID())
		}
		// Named for the hub the work came from, as OCM's agent names it: the hash of the hub's URL, or
		// over gRPC of the server's.
		hub := c.Config.Host
		if overGRPC {
			hub = grpcServer
		}
		if want := fmt.Sprintf("%x-%s", sha256.Sum256([]byte(hub)), klusterletWork); !slices.Equal(names, []string{want}) {
			t.Errorf("AppliedManifestWorks of %s are named %q, want %s (for the hub %s)", klusterletWork, names, want, hub)
		}
	})

	// The documented switch, with the operator doing the rollout: one field of the Klusterlet. First to
	// OCM's own work agent (a user going back), which must carry on with what Ferry's applied; then to
	// Ferry's again, which must take over from OCM's without re-creating anything.
	t.Run("switched to OCM's work image, OCM's agent carries on with the work", func(t *testing.T) {
		before := klusterletObjectUIDs(t, kube)
		switchWorkImage(t, in, kube, ocmWorkImage)
		updateKlusterletWork(t, works, "ocm-work-agent")
		waitConfigMapFrom(t, kube, works, "ocm-work-agent")
		if after := klusterletObjectUIDs(t, kube); !maps.Equal(before, after) {
			t.Errorf("objects re-created under OCM's agent: UIDs %v, were %v", after, before)
		}
	})

	t.Run("switched back with kubectl patch, Ferry's agent takes over without re-creating anything", func(t *testing.T) {
		before := klusterletObjectUIDs(t, kube)
		leader := switchWorkImage(t, in, kube, ferryAgentImage)
		updateKlusterletWork(t, works, "ferry-agent-again")
		waitConfigMapFrom(t, kube, works, "ferry-agent-again")
		if after := klusterletObjectUIDs(t, kube); !maps.Equal(before, after) {
			t.Errorf("objects re-created when Ferry's agent took over: UIDs %v, were %v", after, before)
		}
		p, err := kube.CoreV1().Pods(ocmAgentNamespace).Get(ctx, leader.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n := restarts(p); n != 0 {
			t.Errorf("Ferry's agent pod %s restarted %d times taking over", p.Name, n)
		}
	})
}

const klusterletWork = "klusterlet-hello"

// createKlusterletWork creates a work of kinds OCM's work agent could apply under the klusterlet's
// RBAC: a Namespace, a ConfigMap whose data says from, and a Deployment of the node's pause image.
func createKlusterletWork(t *testing.T, works workclientset.Interface, from string) {
	t.Helper()
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: klusterletWork}}
	w.Spec.Workload.Manifests = klusterletManifests(t, from)
	if _, err := works.WorkV1().ManifestWorks(installedCluster).Create(t.Context(), w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create work %s: %v", klusterletWork, err)
	}
}

// updateKlusterletWork changes the ConfigMap's data of the work to from.
func updateKlusterletWork(t *testing.T, works workclientset.Interface, from string) {
	t.Helper()
	w, err := works.WorkV1().ManifestWorks(installedCluster).Get(t.Context(), klusterletWork, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Spec.Workload.Manifests = klusterletManifests(t, from)
	if _, err := works.WorkV1().ManifestWorks(installedCluster).Update(t.Context(), w, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update work %s: %v", klusterletWork, err)
	}
}

func klusterletManifests(t *testing.T, from string) []workv1.Manifest {
	t.Helper()
	manifests := []map[string]any{
		{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "klusterlet-hello"}},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "hello", "namespace": "klusterlet-hello"}, "data": map[string]any{"from": from}},
		{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "idle", "namespace": "klusterlet-hello"},
			"spec": map[string]any{
				"replicas": 1,
				"selector": map[string]any{"matchLabels": map[string]any{"app": "idle"}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"app": "idle"}},
					"spec": map[string]any{"containers": []any{map[string]any{
						"name": "pause", "image": localcluster.PauseImage, "imagePullPolicy": "Never",
					}}},
				},
			}},
	}
	var out []workv1.Manifest
	for _, m := range manifests {
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	return out
}

// switchWorkImage sets the Klusterlet's work image as deploy/README.md tells a user to, and waits until
// a Ready pod of the operator's rolling update, running that image, holds the Lease work-agent-lock.
func switchWorkImage(t *testing.T, in *podinstall.Installer, kube kubernetes.Interface, image string) *corev1.Pod {
	t.Helper()
	patched := time.Now()
	if err := in.Kubectl(t.Context(), "patch", "klusterlet", "klusterlet", "--type=merge",
		"-p", fmt.Sprintf(`{"spec":{"workImagePullSpec":%q}}`, image)); err != nil {
		t.Fatal(err)
	}
	var leader *corev1.Pod
	last := ""
	waitFor(t, "a pod of "+image+" holds the Lease "+ocmWorkLease, podWait, func(ctx context.Context) (bool, error) {
		lease, err := kube.CoordinationV1().Leases(ocmAgentNamespace).Get(ctx, ocmWorkLease, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pods, err := kube.CoreV1().Pods(ocmAgentNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=klusterlet-manifestwork-agent"})
		if err != nil {
			return false, nil
		}
		holder := ptr.Deref(lease.Spec.HolderIdentity, "")
		last = "holder " + holder + "; pods: " + podinstall.DescribePods(pods.Items)
		for i := range pods.Items {
			p := &pods.Items[i]
			if strings.HasPrefix(holder, p.Name+"_") && p.Spec.Containers[0].Image == image && podinstall.PodReady(p) {
				leader = p
				return true, nil
			}
		}
		return false, nil
	}, func() string { return last })
	t.Logf("%s leads %s after the Klusterlet's work image was set to %s", leader.Name, time.Since(patched).Round(time.Millisecond), image)
	return leader
}

// waitConfigMapFrom waits until the work's ConfigMap on the cluster says from, and the work is Applied.
func waitConfigMapFrom(t *testing.T, kube kubernetes.Interface, works workclientset.Interface, from string) {
	t.Helper()
	waitFor(t, "ConfigMap klusterlet-hello/hello applied with from="+from, podWait, func(ctx context.Context) (bool, error) {
		cm, err := kube.CoreV1().ConfigMaps("klusterlet-hello").Get(ctx, "hello", metav1.GetOptions{})
		return err == nil && cm.Data["from"] == from, nil
	})
	waitKlusterletWork(t, works)
}

// klusterletObjectUIDs are the UIDs of the work's objects on the cluster, by kind.
func klusterletObjectUIDs(t *testing.T, kube kubernetes.Interface) map[string]types.UID {
	t.Helper()
	ctx := t.Context()
	ns, err := kube.CoreV1().Namespaces().Get(ctx, "klusterlet-hello", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm, err := kube.CoreV1().ConfigMaps("klusterlet-hello").Get(ctx, "hello", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := kube.AppsV1().Deployments("klusterlet-hello").Get(ctx, "idle", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]types.UID{"Namespace": ns.UID, "ConfigMap": cm.UID, "Deployment": d.UID}
}

func waitKlusterletWork(t *testing.T, works workclientset.Interface) *workv1.ManifestWork {
	t.Helper()
	var w *workv1.ManifestWork
	waitFor(t, "work "+klusterletWork+" Applied and Available with its 3 manifests reported", podWait, func(ctx context.Context) (bool, error) {
		var err error
		w, err = works.WorkV1().ManifestWorks(installedCluster).Get(ctx, klusterletWork, metav1.GetOptions{})
		return err == nil && meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkApplied) &&
			meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkAvailable) &&
			len(w.Status.ResourceStatus.Manifests) == 3, nil
	}, func() string {
		if w == nil {
			return "no work"
		}
		return fmt.Sprintf("conditions %v", w.Status.Conditions)
	})
	return w
}

// ocmPeersDir is the directory of OCM's binaries, hub CRDs and render-ocm (`make ocm-peers`).
func ocmPeersDir(t *testing.T, root string) string {
	t.Helper()
	dir := os.Getenv(ocmPeersDirEnv)
	if dir == "" {
		dir = filepath.Join(root, "bin", "ocm-peers", "current")
	}
	for _, f := range []string{"registration", "registration-operator", "render-ocm", "hub-crds"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("OCM's test peers are not built (%v): run `make ocm-peers`", err)
		}
	}
	return dir
}

// renderOCM runs render-ocm, which renders what clusteradm applies with OCM's own charts.
func renderOCM(t *testing.T, peers string, args ...string) {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), filepath.Join(peers, "render-ocm"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("render-ocm %s: %v\n%s", args[0], err, out)
	}
}

// startHubRegistration runs OCM's hub registration controller against the hub until the test ends —
// it grants an accepted cluster its namespace and RBAC, marks it accepted and watches its lease — and
// returns once it is at work: it has made the ManagedClusterSet "default" (its DefaultClusterSet gate
// is on by default).
// extra are further arguments (the gRPC signer's).
func startHubRegistration(t *testing.T, peers string, c *localcluster.Cluster, clusters clusterclientset.Interface, extra ...string) {
	t.Helper()
	hub := startHubProcess(t, c, "OCM's registration controller", "ocm-registration-controller.log", filepath.Join(peers, "registration"),
		append([]string{"controller", "--kubeconfig=" + c.Kubeconfig, "--namespace=" + ocmHubNamespace, "--disable-leader-election"}, extra...)...)
	waitFor(t, "OCM's registration controller makes the ManagedClusterSet default", time.Minute, func(ctx context.Context) (bool, error) {
		if err := hub.exitedEarly(); err != nil {
			return false, err
		}
		_, err := clusters.ClusterV1beta2().ManagedClusterSets().Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}, hub.logTail)
}

// startGRPCServer runs OCM's gRPC server against the hub until the test ends, as the cluster-manager
// operator runs it when a registration driver is grpc: on the hub's address as pods reach it, with a
// serving certificate of signer for that address, and trusting signer's client certificates (those the
// hub registration controller signs for agents registered over gRPC). It returns the server's address
// (host:port) once it listens.
func startGRPCServer(t *testing.T, peers string, c *localcluster.Cluster, signer *localcluster.TestCA) string {
	t.Helper()
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil {
		t.Fatalf("the hub's address %s is not an IP: the gRPC server's certificate needs one", c.Config.Host)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	dir := t.TempDir()
	cert, key, err := signer.IssueServer("grpc-server", ip)
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.yaml")
	data, err := yaml.Marshal(map[string]any{"server_bind_port": port, "tls_cert_file": cert, "tls_key_file": key, "client_ca_file": signer.CAFile()})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, data, 0o600); err != nil {
		t.Fatal(err)
	}
	server := startHubProcess(t, c, "OCM's gRPC server", "ocm-grpc-server.log", filepath.Join(peers, "server"),
		"grpc", "--server-config="+config, "--kubeconfig="+c.Kubeconfig, "--disable-leader-election")
	waitFor(t, "OCM's gRPC server listens on "+addr, time.Minute, func(ctx context.Context) (bool, error) {
		if err := server.exitedEarly(); err != nil {
			return false, err
		}
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return false, nil
		}
		conn.Close()
		return true, nil
	}, server.logTail)
	return addr
}

// hubProcess is one of OCM's hub processes run by a test.
type hubProcess struct {
	name    string
	exited  chan error
	logFile string
}

// startHubProcess runs binary with args until the test ends, its output in logName under the cluster's
// logs, and a free health address (--listen: library-go serves nothing on port 0, and fails).
func startHubProcess(t *testing.T, c *localcluster.Cluster, name, logName, binary string, args ...string) *hubProcess {
	t.Helper()
	logFile, err := os.Create(filepath.Join(c.Dir, "logs", logName))
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := l.Addr().String()
	l.Close()
	cmd := exec.Command(binary, append(args, "--listen="+listen)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &hubProcess{name: name, exited: make(chan error, 1), logFile: logFile.Name()}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
		logFile.Close()
		if t.Failed() {
			t.Logf("%s:\n%s", name, p.logTail())
		}
	})
	return p
}

// exitedEarly says why the process exited, if it did.
func (p *hubProcess) exitedEarly() error {
	select {
	case err := <-p.exited:
		p.exited <- err
		return fmt.Errorf("%s exited: %v", p.name, err)
	default:
		return nil
	}
}

func (p *hubProcess) logTail() string {
	data, _ := os.ReadFile(p.logFile)
	return childproc.Tail(string(data), 60)
}

// writeBootstrapKubeconfig writes the kubeconfig `clusteradm join --hub-token` builds: the hub's address
// as pods reach it, its CA, and a token of the bootstrap ServiceAccount (`clusteradm get token`), which it
// returns.
func writeBootstrapKubeconfig(t *testing.T, kube kubernetes.Interface, c *localcluster.Cluster, path string) string {
	t.Helper()
	tr, err := kube.CoreV1().ServiceAccounts(ocmOperatorNamespace).CreateToken(t.Context(), "agent-registration-bootstrap",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("bootstrap token: %v", err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hub"] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: c.Config.CAData}
	cfg.AuthInfos["bootstrap"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["bootstrap"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "bootstrap"}
	cfg.CurrentContext = "bootstrap"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}
