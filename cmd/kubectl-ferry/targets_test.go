package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/apprevision"
)

// `kubectl ferry targets appconfig` says, by the hub's rules, where an AppConfig's placement reaches
// and why the other clusters are left out: a named cluster that does not exist, one being deleted, one
// in no ManagedClusterSet bound to the namespace, and with --cluster one the placement does not match;
// and for those it reaches, the rollout stage that takes each, the revision its work carries and the
// overrides that select it. No hub runs: the test writes what the hub would (the works, the status).
// A tenant who may not list ManagedClusters gets the AppConfig's status, and the right she lacks.
func TestKubectlFerryTargets(t *testing.T) {
	env := localcluster.StartForTest(t, localcluster.Options{})
	ctx := t.Context()
	c, err := client.New(env.Hub.Config, client.Options{Scheme: mustScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	create := func(objs ...client.Object) {
		t.Helper()
		for _, o := range objs {
			if err := c.Create(ctx, o); err != nil {
				t.Fatalf("create %T %s: %v", o, o.GetName(), err)
			}
		}
	}
	const ns = "shop"
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})

	// Set "fleet" (OCM's exclusive label) is bound to namespace shop; set "elsewhere" is not.
	create(&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}},
		&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: ns},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "fleet"}})
	cluster := func(name, set string, labels map[string]string) *clusterv1.ManagedCluster {
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: set}}}
		for k, v := range labels {
			mc.Labels[k] = v
		}
		return mc
	}
	leaving := cluster("leaving", "fleet", map[string]string{"region": "eu"})
	leaving.Finalizers = []string{"ferry.io/test-hold"} // holds it while being deleted, as an agent's cleanup does
	create(cluster("eu-1", "fleet", map[string]string{"region": "eu", "tier": "canary"}),
		cluster("eu-2", "fleet", map[string]string{"region": "eu"}),
		cluster("us-1", "fleet", map[string]string{"region": "us"}),
		cluster("lab", "fleet", nil),
		cluster("outsider", "elsewhere", map[string]string{"region": "us"}),
		cluster("staging", "fleet", map[string]string{"region": "eu"}),
		leaving)
	if err := c.Delete(ctx, leaving); err != nil {
		t.Fatal(err)
	}
	poll(t, "ManagedCluster leaving is being deleted", func(ctx context.Context) (bool, error) {
		mc := &clusterv1.ManagedCluster{}
		err := c.Get(ctx, client.ObjectKey{Name: "leaving"}, mc)
		return err == nil && mc.DeletionTimestamp != nil, err
	})
	t.Cleanup(func() {
		// Let the API server finish deleting it (the environment goes with the test anyway).
		_ = c.Patch(context.Background(), leaving, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))
	})

	half := intstr.FromString("50%")
	app := &v1alpha2.ApplicationConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: v1alpha2.ApplicationConfigurationSpec{
		Placement:  &v1alpha2.Placement{Clusters: []string{"eu-1", "eu-2", "us-1", "lab", "outsider", "leaving", "ghost"}},
		Components: []v1alpha2.ApplicationConfigurationComponent{{ComponentName: "web"}},
		Rollout: &v1alpha2.Rollout{Stages: []v1alpha2.RolloutStage{
			{Name: "canary", ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}},
			{Name: "europe", ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}, Size: &half},
		}},
		Overrides: []v1alpha2.Override{
			{Name: "regional-registry", ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: metav1.LabelSelectorOpExists}}},
				Image: &v1alpha2.ImageOverride{Registry: "registry.${cluster.labels[region]}.example.com"}},
			{Name: "lab-replicas", Clusters: []string{"lab"}, Patches: []v1alpha2.ObjectPatch{{Target: v1alpha2.ObjectTarget{Kind: "Deployment"},
				MergePatch: &runtime.RawExtension{Raw: []byte(`{"spec":{"replicas":3}}`)}}}},
			{Name: "eu-1-debug", Clusters: []string{"eu-1"}, Annotations: map[string]string{"example.com/debug": "on"}},
		},
	}}
	create(app)
	// The works the hub wrote: eu-1 carries the new revision, eu-2 the stable one, the others none yet.
	// and the revisions it recorded (only their names and hashes matter here).
	for i, hash := range []string{"0b1e4a8c77", "5f7c9d2a41"} {
		create(&appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-" + hash, Namespace: ns,
			Labels: map[string]string{v1alpha2.LabelAppConfigNamespace: ns, v1alpha2.LabelAppConfigName: "web", apprevision.LabelHash: hash}},
			Data: runtime.RawExtension{Raw: []byte(`{}`)}, Revision: int64(i + 1)})
	}
	for cluster, revision := range map[string]string{"eu-1": "5f7c9d2a41", "eu-2": "0b1e4a8c77"} {
		mw := manifestWork(t, v1alpha2.ManifestWorkName(ns, "web"), "{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: shop}}")
		mw.Namespace = cluster
		mw.Labels = map[string]string{v1alpha2.LabelAppConfigNamespace: ns, v1alpha2.LabelAppConfigName: "web"}
		mw.Annotations = map[string]string{v1alpha2.AnnotationRevisionHash: revision}
		create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster}}, mw)
	}

	t.Run("every cluster of the placement, targeted or why not, with stage, revision and overrides", func(t *testing.T) {
		var out bytes.Buffer
		if err := kubectlFerry(ctx, env.Hub.Kubeconfig, &out, "targets", "appconfig", "web", "-n", ns); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		golden(t, "targets-web.golden", out.String())
	})

	t.Run("--cluster of a cluster the placement does not match", func(t *testing.T) {
		var out bytes.Buffer
		if err := kubectlFerry(ctx, env.Hub.Kubeconfig, &out, "targets", "appconfig", "web", "-n", ns, "--cluster", "staging"); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		text := out.String()
		rows := lastTable(t, text, "CLUSTER")
		if len(rows) != 1 || strings.Join(rows[0], " ") != "staging no (not matched by the placement) - - regional-registry" {
			t.Errorf("--cluster staging printed rows %q, want staging alone, not matched:\n%s", rows, text)
		}
		out.Reset()
		if err := kubectlFerry(ctx, env.Hub.Kubeconfig, &out, "targets", "appconfig", "web", "-n", ns, "--cluster", "ghost"); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		if rows := lastTable(t, out.String(), "CLUSTER"); len(rows) != 1 || strings.Join(rows[0], " ") != "ghost no (no ManagedCluster) - - -" {
			t.Errorf("--cluster ghost printed rows %q, want ghost alone, without a ManagedCluster", rows)
		}
	})

	t.Run("-o json decodes to the same targets", func(t *testing.T) {
		var out bytes.Buffer
		if err := kubectlFerry(ctx, env.Hub.Kubeconfig, &out, "targets", "appconfig", "web", "-n", ns, "-o", "json"); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		var got targets
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("-o json: %v\n%s", err, out.String())
		}
		byName := map[string]target{}
		for _, c := range got.Clusters {
			byName[c.Cluster] = c
		}
		if got.AppConfig != "shop/web" || got.Placement != "clusters" || strings.Join(got.BoundSets, ",") != "fleet" || len(got.Clusters) != 7 {
			t.Errorf("-o json: %s", out.String())
		}
		if c := byName["eu-1"]; !c.Targeted || c.Stage != "canary" || c.Revision != "5f7c9d2a41" || c.RevisionName != "web-5f7c9d2a41" || strings.Join(c.Overrides, ",") != "regional-registry,eu-1-debug" {
			t.Errorf("eu-1: %+v", c)
		}
		if c := byName["outsider"]; c.Targeted || c.Reason != "not in a ManagedClusterSet bound to namespace shop" {
			t.Errorf("outsider: %+v", c)
		}
	})

	t.Run("as a tenant who may not list ManagedClusters: the status, and the right she lacks", func(t *testing.T) {
		// What the hub would have written: us-1 still progressing, outsider refused.
		app.Status = v1alpha2.ApplicationConfigurationStatus{
			Summary:   &v1alpha2.Summary{Clusters: 4, Applied: "4/4", Available: "4/4", Healthy: "3/4"},
			Clusters:  []v1alpha2.ClusterStatus{{Name: "us-1", ManifestWork: "shop.web", Applied: "True", Available: "True", Health: v1alpha2.Progressing}},
			Placement: &v1alpha2.PlacementStatus{Clusters: []string{"eu-1", "eu-2", "lab", "us-1"}, Refused: []string{"outsider"}, RefusedClusters: 1, ClusterSetBindings: v1alpha2.ClusterSetBindingsEnforce},
		}
		if err := c.Status().Update(ctx, app); err != nil {
			t.Fatal(err)
		}
		// alice holds deploy/hub's tenant view role in shop, and nothing cluster-scoped.
		roles := tenantRoles(t)
		for _, r := range roles {
			create(r)
		}
		create(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-view", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "ferry-tenant-view"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}})

		var out bytes.Buffer
		poll(t, "alice reads her AppConfig's targets", func(ctx context.Context) (bool, error) {
			out.Reset()
			// RBAC is read from the API server's cache: the binding may take a moment to count.
			return kubectlFerry(ctx, env.Hub.Kubeconfig, &out, "--as", "alice", "targets", "appconfig", "web", "-n", ns) == nil, nil
		})
		golden(t, "targets-web-tenant.golden", out.String())

		out.Reset()
		if err := kubectlFerry(ctx, env.Hub.Kubeconfig, &out, "--as", "alice", "targets", "appconfig", "web", "-n", ns, "-o", "json"); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		var got targets
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("-o json: %v\n%s", err, out.String())
		}
		if !got.StatusOnly || got.Lacks != listClustersRight || got.Summary == nil || got.Summary.Healthy != "3/4" || len(got.Clusters) != 5 {
			t.Errorf("alice's -o json: %s, want status-only, lacking %q, 4 clusters delivered and 1 refused", out.String(), listClustersRight)
		}
	})
}
