package override

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

var eu1 = Cluster{Name: "eu-1", Labels: map[string]string{"region": "eu", "size": "large"},
	Annotations: map[string]string{"team": "payments"}, Claims: map[string]string{"id.k8s.io": "4f2a"}, DecisionGroups: []string{"canary", "0"}}

func TestSubstitutePutsInTheClustersFactsAndRefusesMissingOnes(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{in: "plain", want: "plain"},
		{in: "${cluster.name}", want: "eu-1"},
		{in: "registry.${cluster.labels[region]}.example.com/${cluster.annotations[team]}", want: "registry.eu.example.com/payments"},
		{in: "id=${cluster.claims[id.k8s.io]};", want: "id=4f2a;"},
		{in: "echo $${HOME} ${cluster.name}", want: "echo ${HOME} eu-1"},
		{in: "${cluster.labels[zone]}", err: "cluster eu-1 has no label zone"},
		{in: "${cluster.claims[region.open-cluster-management.io]}", err: "cluster eu-1 has no ClusterClaim region.open-cluster-management.io"},
		{in: "${HOME}", err: "${HOME} names no fact of a cluster"},
		{in: "${cluster.labels[]}", err: "want ${cluster.labels[KEY]}"},
		{in: "x ${cluster.name", err: "without its }"},
	} {
		got, err := Substitute(c.in, eu1)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("Substitute(%q) = %q, %v; want an error with %q", c.in, got, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("Substitute(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestSelectsByNameSelectorOrDecisionGroup(t *testing.T) {
	for _, c := range []struct {
		name string
		o    v1alpha2.Override
		want bool
	}{
		{"no selection: every cluster", v1alpha2.Override{}, true},
		{"by name", v1alpha2.Override{Clusters: []string{"us-1", "eu-1"}}, true},
		{"another name", v1alpha2.Override{Clusters: []string{"us-1"}}, false},
		{"by selector", v1alpha2.Override{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}}, true},
		{"selector not matching", v1alpha2.Override{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "us"}}}, false},
		{"by decision group name", v1alpha2.Override{DecisionGroups: []string{"canary"}}, true},
		{"by decision group index", v1alpha2.Override{DecisionGroups: []string{"0"}}, true},
		{"any of them", v1alpha2.Override{Clusters: []string{"us-1"}, DecisionGroups: []string{"canary"}}, true},
	} {
		if got, err := Selects(&c.o, eu1); err != nil || got != c.want {
			t.Errorf("%s: Selects = %t, %v; want %t", c.name, got, err, c.want)
		}
	}
}

func TestChangeImageReplacesOnlyThePartsSet(t *testing.T) {
	for _, c := range []struct {
		ref  string
		im   v1alpha2.ImageOverride
		want string
	}{
		{"nginx:1.27", v1alpha2.ImageOverride{Registry: "eu.gcr.io"}, "eu.gcr.io/library/nginx:1.27"},
		{"team/web:1", v1alpha2.ImageOverride{Registry: "eu.gcr.io"}, "eu.gcr.io/team/web:1"},
		{"docker.io/library/nginx:1.27", v1alpha2.ImageOverride{Registry: "eu.gcr.io"}, "eu.gcr.io/library/nginx:1.27"},
		{"localhost:5000/team/web@sha256:abc", v1alpha2.ImageOverride{Registry: "eu.gcr.io"}, "eu.gcr.io/team/web@sha256:abc"},
		{"quay.io/team/web:1", v1alpha2.ImageOverride{Repository: "other/api"}, "quay.io/other/api:1"},
		{"quay.io/team/web:1@sha256:abc", v1alpha2.ImageOverride{Tag: "2"}, "quay.io/team/web:2"},
		{"team/web", v1alpha2.ImageOverride{Tag: "2"}, "team/web:2"},
		{"registry:5000/web:1", v1alpha2.ImageOverride{Registry: "r.example.com/", Tag: "3"}, "r.example.com/web:3"},
	} {
		if got, err := changeImage(c.ref, &c.im); err != nil || got != c.want {
			t.Errorf("changeImage(%q, %+v) = %q, %v; want %q", c.ref, c.im, got, err, c.want)
		}
	}
}

// manifests are what a ManifestWork of a component web (a Deployment) with a trait (a Service) and a
// component settings (a ConfigMap) holds.
func manifests(t *testing.T) []workv1.Manifest {
	t.Helper()
	objs := []string{
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"app.oam.dev/component":"web","app.oam.dev/resourceType":"WORKLOAD"},"name":"web","namespace":"shop"},"spec":{"replicas":1,"template":{"spec":{"containers":[{"image":"nginx:1","name":"web"}],"initContainers":[{"image":"busybox:1","name":"init"}]}}}}`,
		`{"apiVersion":"v1","kind":"Service","metadata":{"labels":{"app.oam.dev/component":"web","app.oam.dev/resourceType":"TRAIT"},"name":"web","namespace":"shop"},"spec":{"ports":[{"port":80}]}}`,
		`{"apiVersion":"v1","data":{"mode":"on"},"kind":"ConfigMap","metadata":{"labels":{"app.oam.dev/component":"settings","app.oam.dev/resourceType":"WORKLOAD"},"name":"settings","namespace":"shop"}}`,
	}
	out := make([]workv1.Manifest, len(objs))
	for i, o := range objs {
		out[i].Raw = []byte(o)
	}
	return out
}

func raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

// object decodes manifest i of ms.
func object(t *testing.T, ms []workv1.Manifest, i int) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal(ms[i].Raw, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestForClusterAppliesTheSelectedOverridesInOrder(t *testing.T) {
	in := manifests(t)
	overrides := []v1alpha2.Override{
		{Name: "regional-registry", ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: metav1.LabelSelectorOpExists}}},
			Image: &v1alpha2.ImageOverride{Component: "web", Registry: "registry.${cluster.labels[region]}.example.com"}},
		{Name: "us-only", ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "us"}}, Labels: map[string]string{"never": "here"}},
		{Name: "large", ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"size": "large"}},
			Annotations: map[string]string{"example.com/cluster-id": "${cluster.claims[id.k8s.io]}"},
			Patches: []v1alpha2.ObjectPatch{
				{Target: v1alpha2.ObjectTarget{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, MergePatch: raw(`{"spec":{"replicas":3}}`)},
				{Target: v1alpha2.ObjectTarget{Kind: "ConfigMap"}, JSONPatch: []v1alpha2.JSONPatchOperation{
					{Op: "add", Path: "/data/cluster", Value: raw(`"${cluster.name}"`)},
					{Op: "replace", Path: "/data/mode", Value: raw(`"off"`)},
				}},
			}},
		{Name: "later-wins", Clusters: []string{"eu-1"}, Patches: []v1alpha2.ObjectPatch{
			{Target: v1alpha2.ObjectTarget{Kind: "Deployment"}, MergePatch: raw(`{"spec":{"replicas":5}}`)}}},
	}
	got, applied, err := ForCluster(in, overrides, eu1)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(applied, ",") != "regional-registry,large,later-wins" {
		t.Errorf("applied %v, want regional-registry, large and later-wins", applied)
	}
	deploy := object(t, got, 0)
	spec := deploy["spec"].(map[string]any)
	if spec["replicas"] != float64(5) {
		t.Errorf("replicas %v, want 5: the later override wins", spec["replicas"])
	}
	pod := spec["template"].(map[string]any)["spec"].(map[string]any)
	if img := pod["containers"].([]any)[0].(map[string]any)["image"]; img != "registry.eu.example.com/library/nginx:1" {
		t.Errorf("container image %v, want the region's registry", img)
	}
	if img := pod["initContainers"].([]any)[0].(map[string]any)["image"]; img != "registry.eu.example.com/library/busybox:1" {
		t.Errorf("init container image %v, want the region's registry", img)
	}
	cm := object(t, got, 2)
	if data := cm["data"].(map[string]any); data["cluster"] != "eu-1" || data["mode"] != "off" {
		t.Errorf("ConfigMap data %v, want cluster eu-1 and mode off", data)
	}
	for i := range got {
		md := object(t, got, i)["metadata"].(map[string]any)
		if a, _ := md["annotations"].(map[string]any); a["example.com/cluster-id"] != "4f2a" {
			t.Errorf("manifest %d annotations %v, want the cluster's id claim", i, a)
		}
		if l := md["labels"].(map[string]any); l["never"] != nil || l["app.oam.dev/component"] == nil {
			t.Errorf("manifest %d labels %v: want its own, not the us-only override's", i, l)
		}
	}

	// A cluster no override selects gets the manifests as they were, byte for byte.
	plain, applied, err := ForCluster(in, overrides, Cluster{Name: "lab"})
	if err != nil || len(applied) != 0 {
		t.Fatalf("a cluster no override selects: %v applied, %v", applied, err)
	}
	for i := range in {
		if string(plain[i].Raw) != string(in[i].Raw) {
			t.Errorf("manifest %d changed for a cluster no override selects:\n%s", i, plain[i].Raw)
		}
	}
	if replicas := object(t, in, 0)["spec"].(map[string]any)["replicas"]; replicas != float64(1) {
		t.Errorf("the manifests given changed: replicas %v, want 1", replicas)
	}
}

func TestForClusterNamesTheOverrideTheClusterAndTheObjectOfAnError(t *testing.T) {
	deployment := v1alpha2.ObjectTarget{Kind: "Deployment", Name: "web"}
	for _, c := range []struct {
		name string
		o    v1alpha2.Override
		want []string
	}{
		{"replace of a path that does not exist", v1alpha2.Override{Name: "bad", Patches: []v1alpha2.ObjectPatch{{Target: deployment,
			JSONPatch: []v1alpha2.JSONPatchOperation{{Op: "replace", Path: "/spec/paused", Value: raw(`true`)}}}}},
			[]string{"override bad for cluster eu-1 on Deployment web: jsonPatch"}},
		{"a target not rendered", v1alpha2.Override{Name: "gone", Patches: []v1alpha2.ObjectPatch{{Target: v1alpha2.ObjectTarget{Kind: "Deployment", Name: "api"},
			MergePatch: raw(`{"spec":{"replicas":2}}`)}}},
			[]string{"override gone for cluster eu-1", "patch of Deployment api: no such object is rendered"}},
		{"a patch renaming the object", v1alpha2.Override{Name: "rename", Patches: []v1alpha2.ObjectPatch{{Target: deployment,
			MergePatch: raw(`{"metadata":{"name":"other"}}`)}}},
			[]string{"override rename for cluster eu-1 on Deployment web", "may not change an object's apiVersion, kind, name or namespace"}},
		{"a missing fact", v1alpha2.Override{Name: "zone", Labels: map[string]string{"zone": "${cluster.labels[zone]}"}},
			[]string{"override zone for cluster eu-1", "cluster eu-1 has no label zone"}},
		{"Ferry's own label", v1alpha2.Override{Name: "own", Labels: map[string]string{"app.oam.dev/component": "x"}},
			[]string{"override own for cluster eu-1", "app.oam.dev/component is Ferry's own key"}},
		{"an image of a component not rendered", v1alpha2.Override{Name: "img", Image: &v1alpha2.ImageOverride{Component: "api", Tag: "2"}},
			[]string{"override img for cluster eu-1: image: no workload of component api is rendered"}},
		{"an image of a workload with no containers", v1alpha2.Override{Name: "img", Image: &v1alpha2.ImageOverride{Component: "settings", Tag: "2"}},
			[]string{"override img for cluster eu-1 on ConfigMap settings: image: the workload has no containers"}},
	} {
		_, _, err := ForCluster(manifests(t), []v1alpha2.Override{c.o}, eu1)
		var oe *Error
		if err == nil || !errors.As(err, &oe) {
			t.Errorf("%s: %v, want an override Error", c.name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q, want it to say %q", c.name, err, w)
			}
		}
	}
}
