package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

var update = flag.Bool("update", false, "write the golden files of testdata/ from what the commands print")

// `kubectl ferry render appconfig` prints what each cluster gets of the revision the hub recorded: the
// region's registry from a label, the ID from a ClusterClaim, only where the overrides select; and
// says what stops it — a fact the cluster lacks, a cluster that does not exist.
func TestKubectlFerryRender(t *testing.T) {
	env := localcluster.StartForTest(t, localcluster.Options{})
	ctx := t.Context()
	c, err := client.New(env.Hub.Config, client.Options{Scheme: mustScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Hub.BindGlobalClusterSet(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	for name, region := range map[string]string{"eu-1": "eu", "us-1": "us", "lab": ""} {
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if region != "" {
			mc.Labels = map[string]string{"region": region}
		}
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, mc); err != nil {
			t.Fatal(err)
		}
		if name == "eu-1" {
			mc.Status.ClusterClaims = []clusterv1.ManagedClusterClaim{{Name: "id.k8s.io", Value: "eu-1-4f2a"}}
			if err := c.Status().Update(ctx, mc); err != nil {
				t.Fatal(err)
			}
		}
	}
	runHub(t, env)
	component := &v1alpha2.Component{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: v1alpha2.ComponentSpec{
		Workload: runtime.RawExtension{Raw: []byte(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":1,` +
			`"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1"}]}}}}`)},
		Parameters: []v1alpha2.ComponentParameter{{Name: "replicas", FieldPaths: []string{"spec.replicas"}}}}}
	app := &v1alpha2.ApplicationConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default"}, Spec: v1alpha2.ApplicationConfigurationSpec{
		Placement:  &v1alpha2.Placement{Clusters: []string{"eu-1", "us-1", "lab"}},
		Components: []v1alpha2.ApplicationConfigurationComponent{{ComponentName: "web"}},
		Overrides: []v1alpha2.Override{
			{Name: "regional-registry", ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: metav1.LabelSelectorOpExists}}},
				Image: &v1alpha2.ImageOverride{Registry: "registry.${cluster.labels[region]}.example.com"}},
			{Name: "cluster-id", Clusters: []string{"eu-1"}, Annotations: map[string]string{"example.com/cluster-id": "${cluster.claims[id.k8s.io]}"}},
			{Name: "lab-replicas", Clusters: []string{"lab"}, Patches: []v1alpha2.ObjectPatch{{Target: v1alpha2.ObjectTarget{Kind: "Deployment"},
				MergePatch: &runtime.RawExtension{Raw: []byte(`{"spec":{"replicas":3}}`)}}}},
		},
	}}
	for _, o := range []client.Object{component, app} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	poll(t, "the hub recorded a revision of shop", func(ctx context.Context) (bool, error) {
		revs := &appsv1.ControllerRevisionList{}
		err := c.List(ctx, revs, client.InNamespace("default"), client.MatchingLabels{v1alpha2.LabelAppConfigName: "shop"})
		return err == nil && len(revs.Items) == 1, err
	})

	for _, cluster := range []string{"eu-1", "us-1", "lab"} {
		var out bytes.Buffer
		if err := kubectlFerry(ctx, env.Hub.Kubeconfig, &out, "render", "appconfig", "shop", "-n", "default", "--cluster", cluster); err != nil {
			t.Fatalf("render for %s: %v\n%s", cluster, err, out.String())
		}
		golden(t, "render-"+cluster+".golden", out.String())

		// Exactly what the hub delivers.
		out.Reset()
		if err := kubectlFerry(ctx, env.Hub.Kubeconfig, &out, "render", "appconfig", "shop", "-n", "default", "--cluster", cluster, "-o", "json"); err != nil {
			t.Fatalf("render -o json for %s: %v", cluster, err)
		}
		rendered := &workv1.ManifestWork{}
		if err := json.Unmarshal(out.Bytes(), rendered); err != nil {
			t.Fatalf("render -o json for %s: %v\n%s", cluster, err, out.String())
		}
		poll(t, "the hub delivered what render prints to "+cluster, func(ctx context.Context) (bool, error) {
			delivered := &workv1.ManifestWork{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: cluster, Name: "default.shop"}, delivered); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			// The API server fills defaults into the rest of a stored spec; the manifests are as written.
			return sameManifests(delivered.Spec.Workload.Manifests, rendered.Spec.Workload.Manifests), nil
		})
	}

	// -f renders an AppConfig before it is applied exactly as the hub does once it is: the applied one
	// gives what the hub delivered; one with a new image of its Component and an override of its
	// parameters gives that, at the Component revision the hub would record.
	dir := t.TempDir()
	writeFile := func(name string, objs ...any) string {
		t.Helper()
		var docs []string
		for _, o := range objs {
			data, err := yaml.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, string(data))
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	typed := func(o client.Object, kind string) client.Object {
		o.GetObjectKind().SetGroupVersionKind(v1alpha2.SchemeGroupVersion.WithKind(kind))
		o.SetResourceVersion("")
		o.SetManagedFields(nil)
		return o
	}
	var out bytes.Buffer
	applied := writeFile("applied.yaml", typed(app.DeepCopy(), "ApplicationConfiguration"))
	if err := kubectlFerry(ctx, env.Hub.Kubeconfig, &out, "render", "appconfig", "-f", applied, "--cluster", "eu-1", "-o", "json"); err != nil {
		t.Fatalf("render -f of the applied AppConfig: %v\n%s", err, out.String())
	}
	fromFile := &workv1.ManifestWork{}
	if err := json.Unmarshal(out.Bytes(), fromFile); err != nil {
		t.Fatalf("render -f -o json: %v\n%s", err, out.String())
	}
	delivered := &workv1.ManifestWork{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "eu-1", Name: "default.shop"}, delivered); err != nil {
		t.Fatal(err)
	}
	if !sameManifests(delivered.Spec.Workload.Manifests, fromFile.Spec.Workload.Manifests) {
		t.Errorf("render -f of the applied AppConfig for eu-1:\n%s\nwant what the hub delivered", out.String())
	}
	changed := component.DeepCopy()
	changed.Spec.Workload.Raw = []byte(strings.Replace(string(changed.Spec.Workload.Raw), "nginx:1", "nginx:2", 1))
	next := app.DeepCopy()
	next.Spec.Overrides = append(next.Spec.Overrides, v1alpha2.Override{Name: "lab-scale", Clusters: []string{"lab"}, Components: []v1alpha2.ComponentOverride{{
		ComponentName: "web", ParameterValues: []v1alpha2.ComponentParameterValue{{Name: "replicas", Value: runtime.RawExtension{Raw: []byte(`4`)}}}}}})
	unapplied := writeFile("next.yaml", typed(next, "ApplicationConfiguration"), typed(changed, "Component"))
	out.Reset()
	if err := kubectlFerry(ctx, env.Hub.Kubeconfig, &out, "render", "appconfig", "-f", unapplied, "--cluster", "lab"); err != nil {
		t.Fatalf("render -f of a changed AppConfig: %v\n%s", err, out.String())
	}
	golden(t, "render-file-lab.golden", strings.ReplaceAll(out.String(), dir, "DIR"))
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"shop", "-f", applied}, "not both"},
		{[]string{"-f", writeFile("component.yaml", typed(changed, "Component"))}, "holds no ApplicationConfiguration"},
		{[]string{"-f", applied, "--apply-once-only", "sometimes"}, `--apply-once-only "sometimes"`},
	} {
		err := kubectlFerry(ctx, env.Hub.Kubeconfig, &out, append([]string{"render", "appconfig", "--cluster", "eu-1"}, bad.args...)...)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("render %v: %v, want an error saying %q", bad.args, err, bad.want)
		}
	}

	// What stops a render: a fact the cluster lacks, a cluster that does not exist.
	if err := c.Patch(ctx, app, client.RawPatch("application/merge-patch+json",
		[]byte(`{"spec":{"overrides":[{"name":"zone","annotations":{"example.com/zone":"${cluster.labels[zone]}"}}]}}`))); err != nil {
		t.Fatal(err)
	}
	poll(t, "the hub recorded the second revision", func(ctx context.Context) (bool, error) {
		revs := &appsv1.ControllerRevisionList{}
		err := c.List(ctx, revs, client.InNamespace("default"), client.MatchingLabels{v1alpha2.LabelAppConfigName: "shop"})
		return err == nil && len(revs.Items) == 2, err
	})
	for cluster, want := range map[string]string{
		"us-1":    "revision shop-",
		"nowhere": "read ManagedCluster nowhere",
	} {
		err := kubectlFerry(ctx, env.Hub.Kubeconfig, &out, "render", "appconfig", "shop", "-n", "default", "--cluster", cluster)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("render for %s: %v, want an error saying %q", cluster, err, want)
		}
	}
	err = kubectlFerry(ctx, env.Hub.Kubeconfig, &out, "render", "appconfig", "shop", "-n", "default", "--cluster", "us-1")
	if err == nil || !strings.Contains(err.Error(), "override zone for cluster us-1: cluster us-1 has no label zone") {
		t.Errorf("render for us-1 with a label it lacks: %v, want the override, the cluster and the label named", err)
	}
}

// sameManifests reports whether a and b hold the same objects, in order.
func sameManifests(a, b []workv1.Manifest) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		var x, y any
		if json.Unmarshal(a[i].Raw, &x) != nil || json.Unmarshal(b[i].Raw, &y) != nil || !equality.Semantic.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// golden compares got with testdata/name, or writes it there with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from what the command printed:\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}
