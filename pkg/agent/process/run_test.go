package process_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	workclientset "open-cluster-management.io/api/client/work/clientset/versioned"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/pkg/agent/process"
)

// The agent run from its options picks up a hub kubeconfig rewritten with another credential: it
// restarts its hub clients, and goes on working after the old credential loses its rights.
func TestRunPicksUpARewrittenHubKubeconfig(t *testing.T) {
	e := testEnv(t)
	admin, cluster := clusterNamespace(t)
	data, err := os.ReadFile("../../../deploy/agent/hub-clusterrole.yaml")
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	users := map[string]*rest.Config{}
	for _, name := range []string{"old", "new"} {
		if users[name], err = e.Hub.AddUser(cluster+"-"+name, nil); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cluster},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: cluster + "-" + name}},
		}
		if _, err := admin.RbacV1().RoleBindings(cluster).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	writeInlineKubeconfig(t, filepath.Join(dir, "kubeconfig"), users["old"])
	if err := os.WriteFile(filepath.Join(dir, "cluster-name"), []byte(cluster), 0o600); err != nil {
		t.Fatal(err)
	}

	o := runOptions(t, func(o *process.Options) {
		o.HubKubeconfigDir = dir
		o.HubWatchInterval = 100 * time.Millisecond
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- process.Run(ctx, o) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	hub, err := workclientset.NewForConfig(e.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	f := &clusterWorks{t: t, cluster: cluster, hub: hub}
	f.create(f.work(cluster+"-before", `{apiVersion: v1, kind: ConfigMap, metadata: {name: before, namespace: default}}`))
	f.waitWork(cluster+"-before", "applied with the old credential", allApplied)

	// The old credential loses its rights, and the kubeconfig is rewritten with the new one: only an
	// agent that restarted its hub clients can apply the next work and report it.
	if err := admin.RbacV1().RoleBindings(cluster).Delete(t.Context(), "old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	writeInlineKubeconfig(t, filepath.Join(dir, "kubeconfig"), users["new"])
	f.create(f.work(cluster+"-after", `{apiVersion: v1, kind: ConfigMap, metadata: {name: after, namespace: default}}`))
	f.waitWork(cluster+"-after", "applied with the new credential", allApplied)
}

// writeInlineKubeconfig writes a kubeconfig for cfg with the credential inline, as a rewritten
// hub-kubeconfig Secret has it.
func writeInlineKubeconfig(t *testing.T, path string, cfg *rest.Config) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["agent"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "agent"}
	kc.CurrentContext = "hub"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
}

// --terminate-on-files, as an OCM klusterlet passes it: a change of such a file ends Run cleanly, for the
// kubelet to start the agent again.
func TestRunEndsWhenATerminateOnFileChanges(t *testing.T) {
	e := testEnv(t)
	_, cluster := clusterNamespace(t)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeInlineKubeconfig(t, kubeconfig, e.Hub.Config)
	watched := filepath.Join(dir, "tls.crt")
	if err := os.WriteFile(watched, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := runOptions(t, func(o *process.Options) {
		o.SpokeClusterName = cluster
		o.WorkloadSourceConfig = kubeconfig
		o.TerminateOnFiles = []string{watched}
		o.HubWatchInterval = 100 * time.Millisecond
	})
	done := make(chan error, 1)
	go func() { done <- process.Run(context.Background(), o) }()

	hub, err := workclientset.NewForConfig(e.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	f := &clusterWorks{t: t, cluster: cluster, hub: hub}
	f.create(f.work(cluster+"-running", `{apiVersion: v1, kind: ConfigMap, metadata: {name: running, namespace: default}}`))
	f.waitWork(cluster+"-running", "applied", allApplied)

	if err := os.WriteFile(watched, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run ended with %v, want a clean stop", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run still running 30s after a --terminate-on-files file changed")
	}
}

// clusterNamespace creates a cluster namespace of its own on the hub and returns it with an admin
// client of the hub.
func clusterNamespace(t *testing.T) (kubernetes.Interface, string) {
	t.Helper()
	admin, err := kubernetes.NewForConfig(testEnv(t).Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	cluster := "r-" + strings.ToLower(rand.String(6))
	if _, err := admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return admin, cluster
}
