package deploy

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	managedClusterSetBindings = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1beta2", Resource: "managedclustersetbindings"}
	managedClusters           = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1", Resource: "managedclusters"}
)

// The hub's policy ferry-clusterset-bind, as deploy/hub installs it, enforced by a real API server: a
// user may bind a ManagedClusterSet to a namespace only with verb create on managedclustersets/bind
// named after the set, and a binding must have its set's name, as OCM's registration webhook checks.
func TestClusterSetBindPolicyRefusesABindingWithoutBind(t *testing.T) {
	kubectl(t)
	_, objs := render(t, "hub")
	const ns = "team-a"
	env := startPolicyEnv(t, ns, "alice", policiesNamed(t, objs, "ferry-clusterset-bind"))
	env.grant.role(ns, "bindings", rbacv1.PolicyRule{APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"managedclustersetbindings"},
		Verbs: []string{"get", "list", "create", "update", "patch", "delete"}})
	bindings := env.userDyn.Resource(managedClusterSetBindings).Namespace(ns)
	adminBindings := env.adminDyn.Resource(managedClusterSetBindings).Namespace(ns)
	binding := func(name, set string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSetBinding",
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"clusterSet": set},
		}}
	}

	var refusal error
	pollPolicy(t, "a binding alice may not bind is refused", func(ctx context.Context) bool {
		_, refusal = bindings.Create(ctx, binding("blue", "blue"), metav1.CreateOptions{})
		if refusal == nil { // admitted before the policy took effect: try again without it
			_ = adminBindings.Delete(ctx, "blue", metav1.DeleteOptions{})
		}
		return refusedSaying(refusal, "managedclustersets/bind")
	})
	wantRefused(t, "a binding without bind", refusal, "ferry-clusterset-bind",
		"alice", "ManagedClusterSet blue", "namespace team-a", "verb create on managedclustersets/bind named blue", "resourceNames [blue]")

	// The binding's name must be its set's, whoever writes it: on create, and on update.
	_, err := adminBindings.Create(t.Context(), binding("other", "blue"), metav1.CreateOptions{})
	wantRefused(t, "a binding named other for the set blue", err, "ferry-clusterset-bind",
		"the ManagedClusterSetBinding must have the same name as the target ManagedClusterSet")
	_, err = bindings.Create(t.Context(), binding("other", "blue"), metav1.CreateOptions{})
	wantRefused(t, "alice's binding named other for the set blue", err, "ferry-clusterset-bind", "same name")
	green, err := adminBindings.Create(t.Context(), binding("green", "green"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("an administrator's binding: %v", err)
	}
	if err := unstructured.SetNestedField(green.Object, "blue", "spec", "clusterSet"); err != nil {
		t.Fatal(err)
	}
	_, err = adminBindings.Update(t.Context(), green, metav1.UpdateOptions{})
	wantRefused(t, "an update of binding green to the set blue", err, "ferry-clusterset-bind", "same name")

	// With bind on the set blue (a cluster-scoped grant), alice binds blue, and only blue.
	env.grant.clusterRole("bind-blue", rbacv1.PolicyRule{APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"managedclustersets/bind"},
		Verbs: []string{"create"}, ResourceNames: []string{"blue"}})
	pollPolicy(t, "alice's binding is admitted once she may bind blue", func(ctx context.Context) bool {
		_, err := bindings.Create(ctx, binding("blue", "blue"), metav1.CreateOptions{})
		return err == nil
	})
	_, err = bindings.Create(t.Context(), binding("red", "red"), metav1.CreateOptions{})
	wantRefused(t, "a binding of the set red", err, "ferry-clusterset-bind", "managedclustersets/bind named red")
	// An update that keeps the name needs no bind (as in OCM, which checks bind on create).
	blue, err := bindings.Get(t.Context(), "blue", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	blue.SetLabels(map[string]string{"team": "a"})
	if _, err := bindings.Update(t.Context(), blue, metav1.UpdateOptions{}); err != nil {
		t.Errorf("an update of alice's binding's labels: %v", err)
	}
}

// The hub's policy ferry-clusterset-join, as deploy/hub installs it, enforced by a real API server:
// setting, changing or removing a ManagedCluster's label cluster.open-cluster-management.io/clusterset
// needs verb create on managedclustersets/join named after the set it leaves and the set it joins, as
// OCM's registration webhook checks; other changes need nothing more.
func TestClusterSetJoinPolicyRefusesALabelWithoutJoin(t *testing.T) {
	kubectl(t)
	_, objs := render(t, "hub")
	env := startPolicyEnv(t, "", "alice", policiesNamed(t, objs, "ferry-clusterset-join"))
	env.grant.clusterRole("managedclusters", rbacv1.PolicyRule{APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"managedclusters"},
		Verbs: []string{"get", "list", "create", "update", "patch"}},
		rbacv1.PolicyRule{APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"managedclusters/status"},
			Verbs: []string{"update", "patch"}})
	clusters := env.userDyn.Resource(managedClusters)
	adminClusters := env.adminDyn.Resource(managedClusters)
	const label = "cluster.open-cluster-management.io/clusterset"
	cluster := func(name string, labels map[string]string) *unstructured.Unstructured {
		c := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"hubAcceptsClient": true},
		}}
		c.SetLabels(labels)
		return c
	}
	// relabel sets alice's labels on the cluster as she last read it.
	relabel := func(ctx context.Context, name string, labels map[string]string) error {
		c, err := clusters.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c.SetLabels(labels)
		_, err = clusters.Update(ctx, c, metav1.UpdateOptions{})
		return err
	}
	for _, c := range []*unstructured.Unstructured{cluster("cluster1", nil), cluster("cluster2", map[string]string{label: "blue", "env": "dev"})} {
		if _, err := adminClusters.Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	var refusal error
	pollPolicy(t, "adding a cluster to a set alice may not join is refused", func(ctx context.Context) bool {
		refusal = relabel(ctx, "cluster1", map[string]string{label: "red"})
		if refusal == nil { // admitted before the policy took effect: take the label off again
			if c, err := adminClusters.Get(ctx, "cluster1", metav1.GetOptions{}); err == nil {
				c.SetLabels(nil)
				_, _ = adminClusters.Update(ctx, c, metav1.UpdateOptions{})
			}
		}
		return refusedSaying(refusal, "managedclustersets/join")
	})
	wantRefused(t, "adding cluster1 to the set red", refusal, "ferry-clusterset-join",
		"alice", "add ManagedCluster cluster1 to ManagedClusterSet red", "verb create on managedclustersets/join named red", "resourceNames [red]")
	_, err := clusters.Create(t.Context(), cluster("cluster3", map[string]string{label: "red"}), metav1.CreateOptions{})
	wantRefused(t, "creating cluster3 in the set red", err, "ferry-clusterset-join", "ManagedClusterSet red", "managedclustersets/join named red")
	err = relabel(t.Context(), "cluster2", map[string]string{label: "red", "env": "dev"})
	wantRefused(t, "moving cluster2 from the set blue to red", err, "ferry-clusterset-join",
		"remove ManagedCluster cluster2 from ManagedClusterSet blue", "managedclustersets/join named blue")
	err = relabel(t.Context(), "cluster2", map[string]string{"env": "dev"})
	wantRefused(t, "taking cluster2 out of the set blue", err, "ferry-clusterset-join", "from ManagedClusterSet blue")

	// What leaves the set label alone needs no join: other labels, a cluster with no set, the status.
	if err := relabel(t.Context(), "cluster2", map[string]string{label: "blue", "env": "prod"}); err != nil {
		t.Errorf("changing another label of cluster2: %v", err)
	}
	if _, err := clusters.Create(t.Context(), cluster("cluster4", map[string]string{"env": "dev"}), metav1.CreateOptions{}); err != nil {
		t.Errorf("creating a cluster in no set: %v", err)
	}
	status, err := clusters.Get(t.Context(), "cluster2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(status.Object, []any{map[string]any{"type": "ManagedClusterJoined", "status": "True",
		"reason": "Joined", "message": "joined", "lastTransitionTime": "2025-01-01T00:00:00Z"}}, "status", "conditions"); err != nil {
		t.Fatal(err)
	}
	if _, err := clusters.UpdateStatus(t.Context(), status, metav1.UpdateOptions{}); err != nil {
		t.Errorf("updating cluster2's status: %v", err)
	}

	// join on red only: cluster1 joins red, cluster2 still may not leave blue; with blue too, it may.
	env.grant.clusterRole("join-red", rbacv1.PolicyRule{APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"managedclustersets/join"},
		Verbs: []string{"create"}, ResourceNames: []string{"red"}})
	pollPolicy(t, "cluster1 joins red once alice may join red", func(ctx context.Context) bool {
		return relabel(ctx, "cluster1", map[string]string{label: "red"}) == nil
	})
	err = relabel(t.Context(), "cluster2", map[string]string{label: "red", "env": "prod"})
	wantRefused(t, "moving cluster2 from blue to red with join on red only", err, "ferry-clusterset-join", "from ManagedClusterSet blue")
	env.grant.clusterRole("join-blue", rbacv1.PolicyRule{APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"managedclustersets/join"},
		Verbs: []string{"create"}, ResourceNames: []string{"blue"}})
	pollPolicy(t, "cluster2 moves from blue to red once alice may join both", func(ctx context.Context) bool {
		return relabel(ctx, "cluster2", map[string]string{label: "red", "env": "prod"}) == nil
	})
	if err := relabel(t.Context(), "cluster1", nil); err != nil {
		t.Errorf("taking cluster1 out of red with join on red: %v", err)
	}
	if _, err := clusters.Create(t.Context(), cluster("cluster3", map[string]string{label: "blue"}), metav1.CreateOptions{}); err != nil {
		t.Errorf("creating cluster3 in the set blue with join on blue: %v", err)
	}
}
