package localcluster

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// An API server stopped and started again comes back as the same server: same address, same
// certificates (a kubeconfig and a user's client certificate made before still work), same data.
func TestAPIServerStopsAndStartsInPlace(t *testing.T) {
	env := StartForTest(t, Options{})
	hub := env.Hub
	ctx := t.Context()

	// Clients made before the outage, as a running controller holds them: from the kubeconfig file
	// and from a user's client certificate.
	kcCfg, err := clientcmd.BuildConfigFromFlags("", hub.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := kubernetes.NewForConfig(kcCfg)
	if err != nil {
		t.Fatal(err)
	}
	userCfg, err := hub.AddUser("outage-tester", []string{"testers"})
	if err != nil {
		t.Fatal(err)
	}
	user, err := kubernetes.NewForConfig(userCfg)
	if err != nil {
		t.Fatal(err)
	}
	clusters, err := clusterclient.NewForConfig(kcCfg)
	if err != nil {
		t.Fatal(err)
	}

	cm, err := admin.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "before-outage"}, Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mc, err := clusters.ClusterV1().ManagedClusters().Create(ctx, &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "before-outage"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	url := hub.URL()

	// An open watch, as every informer holds one, makes kube-apiserver drain for up to a minute.
	watch, err := admin.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Stop()

	stoppedAt := time.Now()
	if err := hub.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(stoppedAt); took > apiServerStopGrace+10*time.Second {
		t.Errorf("StopAPIServer took %s with a watch open, want at most the grace %s and a kill", took, apiServerStopGrace)
	}
	procs, err := hub.Processes()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range procs {
		names[p.Name] = true
	}
	if names["kube-apiserver"] || !names["etcd"] {
		t.Errorf("after StopAPIServer the cluster runs %v, want etcd without kube-apiserver", procs)
	}
	_, err = admin.CoreV1().ConfigMaps("default").Get(ctx, cm.Name, metav1.GetOptions{})
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("a request while the API server is stopped: %v, want connection refused", err)
	}
	if err := hub.StopAPIServer(); err != nil {
		t.Errorf("stopping a stopped API server: %v", err)
	}

	if err := hub.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("API server down %s, stop to ready", time.Since(stoppedAt).Round(time.Millisecond))
	if hub.URL() != url {
		t.Errorf("API server address %s after the restart, want %s as before", hub.URL(), url)
	}

	got, err := admin.CoreV1().ConfigMaps("default").Get(ctx, cm.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ConfigMap written before the outage, through the kubeconfig made before it: %v", err)
	}
	if got.UID != cm.UID || got.Data["k"] != "v" {
		t.Errorf("ConfigMap after the restart: uid %s data %v, want uid %s data {k: v}", got.UID, got.Data, cm.UID)
	}
	gotMC, err := clusters.ClusterV1().ManagedClusters().Get(ctx, mc.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("custom resource written before the outage: %v", err)
	}
	if gotMC.UID != mc.UID {
		t.Errorf("ManagedCluster uid %s after the restart, want %s", gotMC.UID, mc.UID)
	}
	// The client CA is the same: the user's certificate still authenticates.
	review, err := user.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("user certificate made before the outage: %v", err)
	}
	if review.Status.UserInfo.Username != "outage-tester" {
		t.Errorf("user certificate authenticates as %q, want outage-tester", review.Status.UserInfo.Username)
	}
	// And it takes writes.
	if _, err := admin.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "after-outage"},
	}, metav1.CreateOptions{}); err != nil {
		t.Errorf("write after the restart: %v", err)
	}
}
