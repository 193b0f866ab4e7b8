package deploy

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// flowSchemaHeader is where the API server names the FlowSchema that classified a request.
const flowSchemaHeader = "X-Kubernetes-PF-FlowSchema-UID"

// checkHubLeaderElectionPriority checks that ferry-hub's leader-election requests are served at the
// API server's leader-election priority, as kube-controller-manager's are, and nothing else it sends
// is: on a hub saturated by a fleet's ManifestWork writes and status reports, renewals queued with them
// time out, ferry-hub loses its Lease and exits (seen at 10,000 simulated clusters). The API server
// classifies each request and names the FlowSchema that did in a response header.
func checkHubLeaderElectionPriority(t *testing.T, cfg *rest.Config, d *appsv1.Deployment) {
	t.Helper()
	ns, sa := d.Namespace, d.Spec.Template.Spec.ServiceAccountName
	fs, err := kubernetes.NewForConfigOrDie(cfg).FlowcontrolV1().FlowSchemas().Get(context.Background(), "ferry-hub-leader-election", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("deploy/hub installs no FlowSchema for ferry-hub's leader election: %v", err)
	}
	if got := fs.Spec.PriorityLevelConfiguration.Name; got != "leader-election" {
		t.Errorf("FlowSchema %s: priority level %q, want leader-election", fs.Name, got)
	}

	asHub := rest.CopyConfig(cfg)
	asHub.Impersonate = rest.ImpersonationConfig{UserName: serviceaccount.MakeUsername(ns, sa), Groups: serviceaccount.MakeGroupNames(ns)}
	for _, r := range []struct {
		method, path string
		lifted       bool
	}{
		// What client-go's leader election sends for the Lease (of the hub, or of a shard).
		{http.MethodGet, fmt.Sprintf("/apis/coordination.k8s.io/v1/namespaces/%s/leases/ferry-hub", ns), true},
		{http.MethodPut, fmt.Sprintf("/apis/coordination.k8s.io/v1/namespaces/%s/leases/ferry-hub-shard-0-of-2", ns), true},
		// ferry-hub's other work keeps its ordinary priority.
		{http.MethodGet, "/apis/work.open-cluster-management.io/v1/namespaces/cluster1/manifestworks/ferry-hub", false},
		// A cluster's Lease, which ferry-hub reads for the cluster's availability.
		{http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/cluster1/leases/ferry-hub", false},
	} {
		uid := classifiedBy(t, asHub, r.method, r.path)
		if got := uid == string(fs.UID); got != r.lifted {
			t.Errorf("%s %s as %s: classified by FlowSchema %s; by ferry-hub-leader-election (%s): %v, want %v",
				r.method, r.path, sa, uid, fs.UID, got, r.lifted)
		}
	}
}

// classifiedBy sends one request as cfg's user and returns the UID of the FlowSchema that classified
// it; the request's own outcome (a Lease not found, a body missing) does not matter.
func classifiedBy(t *testing.T, cfg *rest.Config, method, path string) string {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, cfg.Host+path, http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	_ = resp.Body.Close()
	uid := resp.Header.Get(flowSchemaHeader)
	if uid == "" {
		t.Fatalf("%s %s: the API server named no FlowSchema (%s): %s", method, path, flowSchemaHeader, resp.Status)
	}
	return uid
}
