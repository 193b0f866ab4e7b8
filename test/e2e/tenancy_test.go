package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mc/ferry/internal/testing/gobuild"
)

// kubectlRun runs kubectl against kubeconfig, as user when it is not empty (kubectl's --as: the hub
// administrator impersonating a tenant, as the API server authorizes her), with stdin, and returns
// its combined output.
func kubectlRun(kubeconfig, user, stdin string, args ...string) (string, error) {
	if user != "" {
		args = append([]string{"--as", user}, args...)
	}
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// The confused deputy of a shared hub, walked as its users do, through the real ferry-hub and agents
// with deploy/hub's roles and admission policies: a tenant who may only edit AppConfigs in her
// namespace team-a, whose namespace is bound to a set holding cluster1, places an application holding
// a ClusterRoleBinding of cluster-admin on every cluster.
//
//   - she may not bind another set to her namespace, nor leave the executor out (which would apply as
//     the agent), and the refusals name the verb to ask for;
//   - with an executor she may execute as — a ServiceAccount that may edit only team-a on the spokes —
//     her application reaches cluster1 and not cluster2: its ConfigMap lands, its ClusterRoleBinding
//     does not, and the work says why, naming the ServiceAccount;
//   - kubectl ferry shows her what reached her clusters from the AppConfig's status alone;
//   - a hub administrator's binding lets it reach cluster2, and deleting the binding withdraws it from
//     cluster2 only;
//   - nobody puts a cluster into a set without `join` on it.
func TestATenantReachesOnlyHerBoundClustersWithOnlyTheRightsSheMayGrant(t *testing.T) {
	t.Parallel() // brings clusters of its own: see doc.go
	_, _, state := startLocal(t)
	root := repoRoot(t)
	hubKC := filepath.Join(state, "hub.kubeconfig")
	spokeKC := map[string]string{"cluster1": filepath.Join(state, "cluster1.kubeconfig"), "cluster2": filepath.Join(state, "cluster2.kubeconfig")}
	run := func(kubeconfig, user, stdin string, args ...string) string {
		t.Helper()
		out, err := kubectlRun(kubeconfig, user, stdin, args...)
		if err != nil {
			t.Fatalf("kubectl %s (as %q): %v\n%s", strings.Join(args, " "), user, err, out)
		}
		return out
	}
	admin := func(args ...string) string { t.Helper(); return run(hubKC, "", "", args...) }
	adminCreate := func(yaml string) { t.Helper(); run(hubKC, "", yaml, "create", "-f", "-") }

	// The hub administrator onboards team-a: its namespace, a set holding cluster1 bound to it, the
	// built-in edit role for alice there (Ferry's tenant roles aggregate into it). Alice may also
	// write ManagedClusterSetBindings in team-a, so that what stops her binding a set is the bind check.
	admin("create", "namespace", "team-a")
	admin("label", "managedcluster", "cluster1", "tenancy.example.com/team-a=true")
	adminCreate(`
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSet
metadata: {name: team-a}
spec: {clusterSelector: {selectorType: LabelSelector, labelSelector: {matchLabels: {tenancy.example.com/team-a: "true"}}}}
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: team-a, namespace: team-a}
spec: {clusterSet: team-a}
`)
	admin("-n", "team-a", "create", "rolebinding", "alice-edit", "--clusterrole=edit", "--user=alice")
	admin("-n", "team-a", "create", "role", "binding-writer", "--verb=create,get,list", "--resource=managedclustersetbindings.cluster.open-cluster-management.io")
	admin("-n", "team-a", "create", "rolebinding", "alice-binding-writer", "--role=binding-writer", "--user=alice")
	// On each spoke, team-a's ServiceAccount deployer may edit team-a and nothing else.
	for _, kc := range spokeKC {
		run(kc, "", "", "create", "namespace", "team-a")
		run(kc, "", "", "-n", "team-a", "create", "serviceaccount", "deployer")
		run(kc, "", "", "-n", "team-a", "create", "rolebinding", "deployer-edit", "--clusterrole=edit", "--serviceaccount=team-a:deployer")
	}

	// Alice may not bind set default, which holds both clusters, to her namespace.
	var out string
	var err error
	eventually(t, "alice may read AppConfigs in team-a (her roles aggregated)", time.Minute, func(context.Context) (bool, error) {
		_, err := kubectlRun(hubKC, "alice", "", "-n", "team-a", "get", "applicationconfigurations")
		return err == nil, nil
	})
	out, err = kubectlRun(hubKC, "alice", `
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: default, namespace: team-a}
spec: {clusterSet: default}
`, "create", "-f", "-")
	if err == nil || !strings.Contains(out, "managedclustersets/bind") {
		t.Fatalf("alice bound set default to team-a: %v\n%s", err, out)
	}

	// Her application: a ConfigMap, and a ClusterRoleBinding of cluster-admin to team-a's default
	// ServiceAccount, placed on every cluster of the hub.
	run(hubKC, "alice", `
apiVersion: core.oam.dev/v1alpha2
kind: Component
metadata: {name: settings, namespace: team-a}
spec:
  workload: {apiVersion: v1, kind: ConfigMap, data: {team: a}}
---
apiVersion: core.oam.dev/v1alpha2
kind: Component
metadata: {name: grab, namespace: team-a}
spec:
  workload:
    apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRoleBinding
    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
    subjects: [{kind: ServiceAccount, name: default, namespace: team-a}]
`, "create", "-f", "-")
	app := func(executor string) string {
		return `
apiVersion: core.oam.dev/v1alpha2
kind: ApplicationConfiguration
metadata: {name: grab, namespace: team-a}
spec:
  placement: {clusterSelector: {}}
  components: [{componentName: settings}, {componentName: grab}]
` + executor
	}
	// Leaving the executor out would apply it as the agent: refused, naming the verb.
	out, err = kubectlRun(hubKC, "alice", app(""), "create", "-f", "-")
	if err == nil {
		t.Fatalf("alice created an AppConfig naming no executor:\n%s", out)
	}
	for _, says := range []string{"execute-as", "applicationconfigurations", "system:serviceaccount::klusterlet-work-sa"} {
		if !strings.Contains(out, says) {
			t.Errorf("the refusal of an AppConfig naming no executor does not say %q:\n%s", says, out)
		}
	}

	// An administrator lets her execute as team-a's deployer; her AppConfig names it.
	adminCreate(`
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: execute-as-deployer, namespace: team-a}
rules:
- apiGroups: [core.oam.dev]
  resources: [applicationconfigurations]
  verbs: [execute-as]
  resourceNames: ["system:serviceaccount:team-a:deployer"]
`)
	admin("-n", "team-a", "create", "rolebinding", "alice-execute-as-deployer", "--role=execute-as-deployer", "--user=alice")
	withExecutor := app("  executor: {subject: {type: ServiceAccount, serviceAccount: {namespace: team-a, name: deployer}}}\n")
	eventually(t, "alice's AppConfig naming team-a/deployer admitted", time.Minute, func(context.Context) (bool, error) {
		out, err = kubectlRun(hubKC, "alice", withExecutor, "create", "-f", "-")
		return err == nil, nil
	})

	workOn := func(cluster string) (string, bool) {
		out, err := kubectlRun(hubKC, "", "", "-n", cluster, "get", "manifestwork", "team-a.grab", "-o", "jsonpath={.metadata.uid}")
		return out, err == nil
	}
	onSpoke := func(cluster string, args ...string) bool {
		_, err := kubectlRun(spokeKC[cluster], "", "", append([]string{"get"}, args...)...)
		return err == nil
	}
	eventually(t, "the ConfigMap on cluster1, and the work saying why the ClusterRoleBinding is not", 2*time.Minute, func(context.Context) (bool, error) {
		msg, err := kubectlRun(hubKC, "", "", "-n", "cluster1", "get", "manifestwork", "team-a.grab", "-o",
			`jsonpath={.status.resourceStatus.manifests[?(@.resourceMeta.kind=="ClusterRoleBinding")].conditions[?(@.type=="Applied")]}`)
		return err == nil && onSpoke("cluster1", "-n", "team-a", "configmap", "settings") &&
			strings.Contains(msg, `"status":"False"`) && strings.Contains(msg, "team-a/deployer"), nil
	})
	consistently(t, "nothing on cluster2, no ClusterRoleBinding anywhere", 3*time.Second, func(context.Context) error {
		if _, ok := workOn("cluster2"); ok {
			return fmt.Errorf("cluster2 has a ManifestWork of alice's AppConfig")
		}
		for cluster := range spokeKC {
			if onSpoke(cluster, "clusterrolebinding", "grab") {
				return fmt.Errorf("%s has alice's ClusterRoleBinding", cluster)
			}
		}
		if onSpoke("cluster2", "-n", "team-a", "configmap", "settings") {
			return fmt.Errorf("cluster2 has alice's ConfigMap")
		}
		return nil
	})

	// kubectl ferry, as alice, who may not read ManifestWorks: her clusters from the status alone.
	bin := filepath.Join(t.TempDir(), "kubectl-ferry")
	if out, err := gobuild.Command(t.Context(), root, bin, "./cmd/kubectl-ferry").CombinedOutput(); err != nil {
		t.Fatalf("build kubectl-ferry: %v\n%s", err, out)
	}
	ferry := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"--kubeconfig", hubKC, "--as", "alice"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl ferry %s as alice: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	eventually(t, "the AppConfig's status counts cluster1 and refuses cluster2", time.Minute, func(context.Context) (bool, error) {
		out, err := kubectlRun(hubKC, "alice", "", "-n", "team-a", "get", "appconfig", "grab", "-o",
			"jsonpath={.status.summary.clusters} {.status.placement.clusters} {.status.placement.refused}")
		return err == nil && out == `1 ["cluster1"] ["cluster2"]`, nil
	})
	status := ferry("status", "appconfig", "grab", "-n", "team-a")
	for _, says := range []string{"team-a/grab", "cluster1", "ClustersBound", "cluster2", "ManifestWorks"} {
		if !strings.Contains(status, says) {
			t.Errorf("kubectl ferry status appconfig as alice does not say %q:\n%s", says, status)
		}
	}
	// A second application of hers rolls out, stage by stage, over her clusters alone.
	run(hubKC, "alice", `
apiVersion: core.oam.dev/v1alpha2
kind: Component
metadata: {name: notes, namespace: team-a}
spec:
  workload: {apiVersion: v1, kind: ConfigMap, data: {note: rolled}}
---
apiVersion: core.oam.dev/v1alpha2
kind: ApplicationConfiguration
metadata: {name: notes, namespace: team-a}
spec:
  placement: {clusterSelector: {}}
  components: [{componentName: notes}]
  executor: {subject: {type: ServiceAccount, serviceAccount: {namespace: team-a, name: deployer}}}
  rollout: {stages: [{name: all}]}
`, "create", "-f", "-")
	rollout := ferry("rollout", "status", "notes", "-n", "team-a", "--watch", "--timeout", "2m")
	stage := regexp.MustCompile(`(?m)^all\s+1\s+1\s+1\s+0\s`) // STAGE CLUSTERS UPDATED SUCCEEDED FAILED: cluster1 alone
	if !strings.Contains(rollout, "Complete") || !stage.MatchString(rollout) {
		t.Errorf("kubectl ferry rollout status as alice, want stage all Complete on her one cluster:\n%s", rollout)
	}

	// An administrator binds set default (both clusters): cluster2 gets the application. Deleting that
	// binding withdraws it from cluster2, and cluster1 keeps the very work it had.
	uid1, _ := workOn("cluster1")
	adminCreate(`
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: default, namespace: team-a}
spec: {clusterSet: default}
`)
	eventually(t, "alice's ConfigMap on cluster2 once an administrator bound set default", 2*time.Minute, func(context.Context) (bool, error) {
		return onSpoke("cluster2", "-n", "team-a", "configmap", "settings"), nil
	})
	admin("-n", "team-a", "delete", "managedclustersetbinding", "default")
	eventually(t, "alice's application withdrawn from cluster2 with the binding", 2*time.Minute, func(context.Context) (bool, error) {
		_, hasWork := workOn("cluster2")
		return !hasWork && !onSpoke("cluster2", "-n", "team-a", "configmap", "settings"), nil
	})
	if uid, ok := workOn("cluster1"); !ok || uid != uid1 || !onSpoke("cluster1", "-n", "team-a", "configmap", "settings") {
		t.Errorf("cluster1's work %q (was %q) or its ConfigMap changed when cluster2's binding went", uid, uid1)
	}

	// Someone who may edit ManagedClusters but not join their sets cannot move cluster2 into team-a's.
	admin("create", "clusterrole", "cluster-editor", "--verb=get,update,patch", "--resource=managedclusters.cluster.open-cluster-management.io")
	admin("create", "clusterrolebinding", "ops-cluster-editor", "--clusterrole=cluster-editor", "--user=ops")
	out, err = kubectlRun(hubKC, "ops", "", "label", "--overwrite", "managedcluster", "cluster2", "cluster.open-cluster-management.io/clusterset=team-a")
	if err == nil || !strings.Contains(out, "managedclustersets/join") {
		t.Errorf("ops relabelled cluster2 into set team-a without join: %v\n%s", err, out)
	}
	if out, err := kubectlRun(hubKC, "ops", "", "label", "managedcluster", "cluster2", "tenancy.example.com/note=ops"); err != nil {
		t.Errorf("ops may change the other labels of cluster2: %v\n%s", err, out)
	}
}
