package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/internal/statusview"
	"github.com/ferry-mc/ferry/internal/testing/deployrunner"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// kubectl ferry for a tenant of a shared hub: alice holds the built-in edit role in team-a, which
// deploy/hub's tenant roles extend to AppConfigs and Components (aggregated by the hub's
// kube-controller-manager), and may read no ManifestWork. `status appconfig` shows her what the
// AppConfig's status holds — the hub's counts, her clusters, the manifests that are not fine, the
// clusters her namespace's bindings refuse — and says where the rest is, instead of failing with a
// 403; --until-healthy and --watch follow the AppConfig alone. `rollout status` needs nothing more.
// An administrator's view of the same AppConfig is the full one, read from the works.
func TestKubectlFerryForATenant(t *testing.T) {
	env := localcluster.StartForTest(t, localcluster.Options{
		Hub:    localcluster.ClusterSpec{ControllerManager: true}, // aggregates the tenant roles into edit
		Spokes: []localcluster.ClusterSpec{{Name: "cluster1"}},
	})
	ctx := t.Context()
	if err := env.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}
	const ns = "team-a"
	admin, err := kubernetes.NewForConfig(env.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	spoke, err := kubernetes.NewForConfig(env.Spoke("cluster1").Config)
	if err != nil {
		t.Fatal(err)
	}
	// The AppConfigs of team-a render their objects into namespace team-a of the clusters.
	for _, c := range []kubernetes.Interface{admin, spoke} {
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// team-a's set holds cluster1; cluster2, which has no agent, is in no set bound to team-a.
	clusters, err := clusterclient.NewForConfig(env.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1().ManagedClusters().Patch(ctx, "cluster1", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"ferry.io/team":"a"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1().ManagedClusters().Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster2"},
		Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	set := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: clusterv1beta2.ManagedClusterSetSpec{
		ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"ferry.io/team": "a"}}}}}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: ns, Namespace: ns},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: ns}}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSetBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// deploy/hub's tenant roles, and alice an editor of team-a with the built-in role.
	hubClient, err := client.New(env.Hub.Config, client.Options{Scheme: mustScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	roles := tenantRoles(t)
	for _, r := range roles {
		if err := hubClient.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-edit", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	may := func(ctx context.Context, verb, group, resource, namespace string) (bool, error) {
		review, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "alice", Groups: []string{"system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Namespace: namespace}}}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return review.Status.Allowed, nil
	}
	poll(t, "the tenant roles aggregated into edit", func(ctx context.Context) (bool, error) {
		return may(ctx, "watch", v1alpha2.SchemeGroupVersion.Group, "applicationconfigurations", ns)
	})
	if ok, err := may(ctx, "list", "work.open-cluster-management.io", "manifestworks", ""); err != nil || ok {
		t.Fatalf("alice may list ManifestWorks (%t, %v): the test would not be about a tenant", ok, err)
	}

	runAgent(t, env, "cluster1")
	runHub(t, env)
	// asAlice runs kubectl ferry as alice, impersonated by the hub's administrator (kubectl's --as).
	asAlice := func(ctx context.Context, out *syncBuffer, args ...string) error {
		return kubectlFerry(ctx, env.Hub.Kubeconfig, out, append([]string{"--as", "alice"}, args...)...)
	}
	configMap := func(name string) *v1alpha2.Component {
		return &v1alpha2.Component{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1alpha2.ComponentSpec{
			Workload: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","data":{"mode":"on"}}`)}}}
	}
	appConfig := func(name string, placed ...string) *v1alpha2.ApplicationConfiguration {
		return &v1alpha2.ApplicationConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1alpha2.ApplicationConfigurationSpec{Placement: &v1alpha2.Placement{Clusters: placed},
				Components: []v1alpha2.ApplicationConfigurationComponent{{ComponentName: name}}}}
	}
	create := func(objs ...client.Object) {
		t.Helper()
		for _, o := range objs {
			if err := hubClient.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Started before the AppConfig exists, as a script that applies and then waits: alice's watch
	// must not wait on a watch of ManifestWorks she may not make.
	settings := appConfig("settings", "cluster1", "cluster2")
	settings.Spec.Rollout = &v1alpha2.Rollout{Stages: []v1alpha2.RolloutStage{{Name: "canary", Clusters: []string{"cluster1"}}}}
	waited := make(chan error, 1)
	var waitOut syncBuffer
	go func() {
		waited <- asAlice(ctx, &waitOut, "status", "appconfig", "settings", "-n", ns, "--until-healthy", "--timeout", "90s")
	}()
	poll(t, "alice's wait says it waits for the AppConfig", func(context.Context) (bool, error) {
		return strings.Contains(waitOut.String(), "waiting for it"), nil
	})
	create(configMap("settings"), settings)

	t.Run("status appconfig --until-healthy: from the status alone, and the clusters the bindings refuse", func(t *testing.T) {
		if err := <-waited; err != nil {
			t.Fatalf("%v; it printed:\n%s", err, waitOut.String())
		}
		text := waitOut.String()
		t.Logf("alice's wait printed:\n%s", text)
		checkRows(t, text, lastTable(t, text, "APPCONFIG"), []string{"team-a/settings", "True", "1", "1/1", "1/1", "1/1", "-"})
		checkRows(t, text, lastTable(t, text, "CLUSTER"), []string{"cluster1", "-", "-", "-", "True", "True", "Healthy", "-", "-"})
		for _, want := range []string{
			"ClustersBound False (ClustersNotBound): 1 cluster of the placement is in no ManagedClusterSet bound to namespace team-a and gets no ManifestWork: cluster2",
			statusview.StatusOnlyNote,
		} {
			if !strings.Contains(text, want) {
				t.Errorf("alice's view does not say %q:\n%s", want, text)
			}
		}
		if strings.Contains(text, "forbidden") {
			t.Errorf("alice's view speaks of a refusal:\n%s", text)
		}

		// Printed once, as she would look at it.
		var once syncBuffer
		if err := asAlice(ctx, &once, "status", "appconfig", "settings", "-n", ns); err != nil {
			t.Fatal(err)
		}
		t.Logf("kubectl ferry status appconfig settings -n team-a, as alice:\n%s", once.String())
		if last := text[strings.LastIndex(text, "APPCONFIG "):]; once.String() != last {
			t.Errorf("printed once:\n%s\nwant the last view of the wait:\n%s", once.String(), last)
		}
	})

	t.Run("the same AppConfig for an administrator: the full view from the works, and the refused cluster", func(t *testing.T) {
		var out syncBuffer
		if err := kubectlFerry(ctx, env.Hub.Kubeconfig, &out, "status", "appconfig", "settings", "-n", ns); err != nil {
			t.Fatal(err)
		}
		text := out.String()
		t.Logf("kubectl ferry status appconfig settings -n team-a, as the hub's administrator:\n%s", text)
		checkRows(t, text, lastTable(t, text, "APPCONFIG"), []string{"team-a/settings", "True", "1", "1/1", "1/1", "1/1", "-"})
		checkRows(t, text, lastTable(t, text, "CLUSTER"), []string{"cluster1", "ConfigMap", "team-a/settings", "Update", "True", "True", "Healthy", "-", "-"})
		if strings.Contains(text, statusview.StatusOnlyNote) || !strings.Contains(text, "ClustersBound False (ClustersNotBound)") {
			t.Errorf("the administrator's view is not the full one with the refused cluster:\n%s", text)
		}
	})

	t.Run("status appconfig -o json as alice: statusOnly, the hub's counts, cluster2 refused", func(t *testing.T) {
		var out syncBuffer
		if err := asAlice(ctx, &out, "status", "appconfig", "settings", "-n", ns, "-o", "json"); err != nil {
			t.Fatal(err)
		}
		var view statusview.AppConfig
		if err := json.Unmarshal([]byte(out.String()), &view); err != nil {
			t.Fatalf("-o json: %v\n%s", err, out.String())
		}
		if !view.StatusOnly || !view.Healthy || view.Summary == nil || view.Summary.Healthy != "1/1" || len(view.Clusters) != 1 ||
			view.Clusters[0].Cluster != "cluster1" || view.NotBound == nil || strings.Join(view.NotBound.Refused, ",") != "cluster2" {
			t.Errorf("-o json: %s, want status-only, healthy, cluster1 delivered and cluster2 refused", out.String())
		}
	})

	t.Run("rollout status as alice reads the AppConfig alone", func(t *testing.T) {
		var out syncBuffer
		if err := asAlice(ctx, &out, "rollout", "status", "settings", "-n", ns, "--watch", "--timeout", "60s"); err != nil {
			t.Fatalf("%v; it printed:\n%s", err, out.String())
		}
		text := out.String()
		if rows := lastTable(t, text, "APPCONFIG"); len(rows) != 1 || rows[0][0] != "team-a/settings" || rows[0][3] != string(v1alpha2.RolloutComplete) {
			t.Errorf("rollout status printed\n%s\nwant team-a/settings Complete", text)
		}
		if rows := lastTable(t, text, "STAGE"); len(rows) != 1 || len(rows[0]) < 5 || strings.Join(rows[0][:5], " ") != "canary 1 1 1 0" {
			t.Errorf("stages %q, want canary: 1 cluster, updated, succeeded, none failed", rows)
		}

		// The revisions are ControllerRevisions in team-a, which the built-in edit reads.
		out = syncBuffer{}
		if err := asAlice(ctx, &out, "rollout", "history", "settings", "-n", ns); err != nil {
			t.Fatalf("rollout history: %v; it printed:\n%s", err, out.String())
		}
		if rows := lastTable(t, out.String(), "REVISION"); len(rows) != 1 || rows[0][0] != "1" || rows[0][len(rows[0])-1] != "stable" {
			t.Errorf("rollout history printed\n%s\nwant one revision, stable", out.String())
		}
	})

	// A Deployment no controller runs on cluster1 (it has no kube-controller-manager): never ready.
	stuck := &v1alpha2.Component{ObjectMeta: metav1.ObjectMeta{Name: "stuck", Namespace: ns}, Spec: v1alpha2.ComponentSpec{
		Workload: runtime.RawExtension{Raw: []byte(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":1,` +
			`"selector":{"matchLabels":{"app":"stuck"}},"template":{"metadata":{"labels":{"app":"stuck"}},` +
			`"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}}}`)}}}
	create(stuck, appConfig("stuck", "cluster1"))

	t.Run("status appconfig as alice lists the manifest that is not fine, as the status gives it", func(t *testing.T) {
		var text string
		poll(t, "alice sees the Deployment Progressing on cluster1", func(ctx context.Context) (bool, error) {
			var out syncBuffer
			if err := asAlice(ctx, &out, "status", "appconfig", "stuck", "-n", ns); err != nil {
				return false, err
			}
			text = out.String()
			return strings.Contains(text, "Progressing"), nil
		})
		t.Logf("alice's view:\n%s", text)
		checkRows(t, text, lastTable(t, text, "APPCONFIG"), []string{"team-a/stuck", "True", "1", "1/1", "1/1", "0/1", "-"})
		rows := lastTable(t, text, "CLUSTER")
		if len(rows) != 1 || len(rows[0]) < 7 || strings.Join(rows[0][:7], " ") != "cluster1 Deployment team-a/stuck - True True Progressing" {
			t.Errorf("manifest rows %q, want the Deployment on cluster1, Progressing, without a strategy:\n%s", rows, text)
		}
		if !strings.Contains(text, statusview.StatusOnlyNote) || strings.Contains(text, "ClustersBound") {
			t.Errorf("want the status-only note and no ClustersBound line (every cluster bound):\n%s", text)
		}

		var out syncBuffer
		err := asAlice(ctx, &out, "status", "appconfig", "stuck", "-n", ns, "--until-healthy", "--timeout", "2s")
		if err == nil {
			t.Fatalf("--until-healthy succeeded for a Deployment that never runs; it printed:\n%s", out.String())
		}
		for _, want := range []string{"ApplicationConfiguration team-a/stuck is not healthy after 2s", "cluster1: Deployment team-a/stuck", "health Progressing"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	})
	t.Run("render as alice: what her AppConfig gives a cluster, and which right it lacks to read the cluster's facts", func(t *testing.T) {
		var out syncBuffer
		if err := asAlice(ctx, &out, "render", "appconfig", "stuck", "-n", ns, "--cluster", "cluster1"); err != nil ||
			!strings.Contains(out.String(), "overrides: none") || !strings.Contains(out.String(), "image: nginx:1.27") {
			t.Fatalf("render without overrides as alice: %v; it printed:\n%s", err, out.String())
		}
		// An override reads the cluster: its ManagedCluster, which team-a's editor may not read.
		if err := hubClient.Patch(ctx, &v1alpha2.ApplicationConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "stuck", Namespace: ns}},
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"overrides":[{"name":"tag","clusters":["cluster1"],"image":{"tag":"1.28"}}]}}`))); err != nil {
			t.Fatal(err)
		}
		poll(t, "the hub recorded the revision with the override", func(ctx context.Context) (bool, error) {
			revs, err := admin.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{LabelSelector: v1alpha2.LabelAppConfigName + "=stuck"})
			return err == nil && len(revs.Items) == 2, err
		})
		err := asAlice(ctx, &out, "render", "appconfig", "stuck", "-n", ns, "--cluster", "cluster1")
		if err == nil || !strings.Contains(err.Error(), "rendering needs get on managedclusters.cluster.open-cluster-management.io cluster1") {
			t.Errorf("render with an override as alice: %v, want the right she lacks named", err)
		}
		out = syncBuffer{}
		if err := kubectlFerry(ctx, env.Hub.Kubeconfig, &out, "render", "appconfig", "stuck", "-n", ns, "--cluster", "cluster1"); err != nil ||
			!strings.Contains(out.String(), "image: nginx:1.28") {
			t.Errorf("render with an override as the administrator: %v; it printed:\n%s", err, out.String())
		}
	})
}

// tenantRoles are the roles deploy/hub gives a hub's tenants.
func tenantRoles(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile("../../deploy/hub/tenant-roles.yaml")
	if err != nil {
		t.Fatal(err)
	}
	roles, err := deployrunner.DecodeObjects(data)
	if err != nil {
		t.Fatal(err)
	}
	return roles
}
