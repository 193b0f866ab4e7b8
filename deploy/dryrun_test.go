package deploy

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

// Every install is accepted by a real API server of its kind of cluster, object by object, as
// `kubectl apply -k` would send it: the hub's to a hub, the agent's to a spoke. Namespaces and CRDs
// are applied for real first, because in a dry run they would not exist for the objects after them.
// Each Deployment's pod is then dry-run created in its namespace, where the restricted Pod Security
// Standard is enforced, and the ServiceAccount is asked whether its bindings grant it what it needs;
// the hub's leader election is checked to be served at leader-election priority.
func TestInstallsApplyToRealAPIServers(t *testing.T) {
	kubectl(t)
	env := localcluster.StartForTest(t, localcluster.Options{Spokes: []localcluster.ClusterSpec{{Name: "cluster1"}}})
	kubeconfigs := map[clusterRole]string{hubCluster: env.Hub.Kubeconfig, spokeCluster: env.Spokes[0].Kubeconfig}

	// What `clusteradm join` leaves on a managed cluster before the overlay is applied: the
	// klusterlet's namespace (the Secret in it is not needed for a dry run).
	if _, _, err := runKubectl(t, nil, "--kubeconfig", kubeconfigs[spokeCluster], "create", "namespace", "open-cluster-management-agent"); err != nil {
		t.Fatal(err)
	}

	for _, in := range installs {
		t.Run(in.dir, func(t *testing.T) {
			kubeconfig := kubeconfigs[in.cluster]
			_, objs := render(t, in.dir)
			var first []*unstructured.Unstructured
			for _, o := range objs {
				if o.GetKind() == "Namespace" || o.GetKind() == "CustomResourceDefinition" {
					first = append(first, o)
				}
			}
			if len(first) > 0 {
				// localcluster installed the CRDs before the test, without kubectl's record of them.
				apply(t, kubeconfig, first, "is missing the kubectl.kubernetes.io/last-applied-configuration annotation")
			}
			apply(t, kubeconfig, objs, "", "--dry-run=server")

			for _, d := range ofKind[appsv1.Deployment](t, objs, "Deployment") {
				createPodDryRun(t, kubeconfig, d)
			}
			// The bindings are checked against the server's authorizer, so they must exist for real.
			apply(t, kubeconfig, objs, "")
			for _, d := range ofKind[appsv1.Deployment](t, objs, "Deployment") {
				checkGrants(t, kubeconfig, d)
			}
			if in.cluster == hubCluster {
				checkHubLeaderElectionPriority(t, env.Hub.Config, ofKind[appsv1.Deployment](t, objs, "Deployment")[0])
			}
		})
	}
}

// apply runs `kubectl apply` with objs, failing on any error, and on any warning but those that
// contain expected (a PodSecurity warning would mean the pods are refused when the Deployment
// creates them).
func apply(t *testing.T, kubeconfig string, objs []*unstructured.Unstructured, expected string, extra ...string) {
	t.Helper()
	var docs bytes.Buffer
	for _, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&docs, "---\n%s", data)
	}
	args := append([]string{"--kubeconfig", kubeconfig, "apply", "-f", "-"}, extra...)
	_, stderr, err := runKubectl(t, docs.Bytes(), args...)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "Warning:") && (expected == "" || !strings.Contains(line, expected)) {
			t.Errorf("kubectl %s warned: %s", strings.Join(args[2:], " "), line)
		}
	}
}

// createPodDryRun asks the API server to admit the Deployment's pod in its namespace: Pod Security
// admission enforces the namespace's restricted level on pods, where for Deployments it only warns.
func createPodDryRun(t *testing.T, kubeconfig string, d *appsv1.Deployment) {
	t.Helper()
	pod := map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   map[string]any{"name": d.Name + "-dry-run", "namespace": d.Namespace, "labels": d.Spec.Template.Labels},
		"spec":       d.Spec.Template.Spec,
	}
	data, err := yaml.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	enforce, _, err := runKubectl(t, nil, "--kubeconfig", kubeconfig, "get", "namespace", d.Namespace,
		"-o", `jsonpath={.metadata.labels.pod-security\.kubernetes\.io/enforce}`)
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, err := runKubectl(t, data, "--kubeconfig", kubeconfig, "create", "--dry-run=server", "-f", "-")
	if err != nil {
		t.Fatalf("the pod of %s is not admitted in namespace %s (Pod Security enforce=%q): %v", d.Name, d.Namespace, enforce, err)
	}
	if strings.Contains(stderr, "Warning:") {
		t.Errorf("creating the pod of %s warned:\n%s", d.Name, stderr)
	}
}

// grants are requests each binary must be allowed on the cluster its install goes to, by
// Deployment; $NS is the Deployment's namespace.
var grants = map[string][][]string{
	"ferry-hub": {
		{"create", "leases.coordination.k8s.io", "-n", "$NS"},
		{"update", "leases.coordination.k8s.io", "-n", "$NS"},
		{"create", "events", "-n", "$NS"},
		{"create", "manifestworks.work.open-cluster-management.io", "-n", "cluster1"},
		{"watch", "applicationconfigurations.core.oam.dev", "--all-namespaces"},
		{"update", "applicationconfigurations.core.oam.dev/status", "-n", "default"},
		{"list", "placementdecisions.cluster.open-cluster-management.io", "--all-namespaces"},
	},
	"ferry-agent": {
		{"create", "leases.coordination.k8s.io", "-n", "$NS"},
		{"update", "leases.coordination.k8s.io", "-n", "$NS"},
		{"delete", "appliedmanifestworks.work.open-cluster-management.io"},
		// The Events it records on the objects it acts on, wherever they are (--spoke-events).
		{"create", "events", "-n", "default"},
		{"patch", "events", "-n", "kube-system"},
		// What works carry: anything, cluster-scoped included.
		{"create", "customresourcedefinitions.apiextensions.k8s.io"},
		{"escalate", "clusterroles.rbac.authorization.k8s.io"},
		{"delete", "deployments.apps", "-n", "default"},
	},
}

// checkGrants asks the API server, as the Deployment's ServiceAccount, for each of its grants.
func checkGrants(t *testing.T, kubeconfig string, d *appsv1.Deployment) {
	t.Helper()
	user := fmt.Sprintf("system:serviceaccount:%s:%s", d.Namespace, d.Spec.Template.Spec.ServiceAccountName)
	want, ok := grants[d.Name]
	if !ok {
		t.Fatalf("no grants listed for Deployment %s", d.Name)
	}
	for _, g := range want {
		args := []string{"--kubeconfig", kubeconfig, "auth", "can-i", "--as", user}
		for _, a := range g {
			args = append(args, strings.ReplaceAll(a, "$NS", d.Namespace))
		}
		out, _, err := runKubectl(t, nil, args...)
		if err != nil || strings.TrimSpace(out) != "yes" {
			t.Errorf("%s may not %s: %s %v", user, strings.Join(args[6:], " "), strings.TrimSpace(out), err)
		}
	}
}
