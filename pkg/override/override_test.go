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

// webParameters are the parameters of the components manifests renders, as a revision records them.
var webParameters = Components{Parameters: map[string][]v1alpha2.ComponentParameter{
	"web":      {{Name: "image", FieldPaths: []string{"spec.template.spec.containers[0].image"}}, {Name: "replicas", FieldPaths: []string{"spec.replicas"}}},
	"settings": {{Name: "sidecar", FieldPaths: []string{"spec.containers[1].image"}}},
}, Resources: map[string]string{"Service.": "services", "HorizontalPodAutoscaler.autoscaling": "horizontalpodautoscalers"}}

// workSpec is the spec of a work of ms, each with a manifestConfig as ferry-hub renders one.
func workSpec(ms []workv1.Manifest) workv1.ManifestWorkSpec {
	spec := workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: ms}}
	for _, id := range []workv1.ResourceIdentifier{
		{Group: "apps", Resource: "deployments", Name: "web", Namespace: "shop"},
		{Resource: "services", Name: "web", Namespace: "shop"},
		{Resource: "configmaps", Name: "settings", Namespace: "shop"},
	} {
		spec.ManifestConfigs = append(spec.ManifestConfigs, workv1.ManifestConfigOption{ResourceIdentifier: id,
			UpdateStrategy: &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeUpdate}})
	}
	return spec
}

// An override of a component changes what the AppConfig's entry would for the clusters it selects: a
// parameter value writes the component's fields, with the cluster's facts in it; a trait of a kind the
// entry has replaces it (its name, its manifestConfig), one of a new kind is added with its own; the
// trait carries the generation stamp of the workload it belongs to.
func TestForClusterOverridesAComponentsParameterValuesAndTraits(t *testing.T) {
	in := manifests(t)
	in[0].Raw = []byte(strings.Replace(string(in[0].Raw), `"labels":`, `"annotations":{"app.oam.dev/generation":"7"},"labels":`, 1))
	trait := func(obj string, strategy v1alpha2.UpdateStrategy) v1alpha2.ComponentTrait {
		return v1alpha2.ComponentTrait{Trait: *raw(obj), UpdateStrategy: strategy}
	}
	overrides := []v1alpha2.Override{{Name: "eu", ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}},
		Components: []v1alpha2.ComponentOverride{{ComponentName: "web",
			ParameterValues: []v1alpha2.ComponentParameterValue{{Name: "image", Value: *raw(`"registry.${cluster.labels[region]}.example.com/web:2"`)}, {Name: "replicas", Value: *raw(`3`)}},
			Traits: []v1alpha2.ComponentTrait{
				trait(`{"apiVersion":"v1","kind":"Service","metadata":{"labels":{"app.oam.dev/component":"web","app.oam.dev/resourceType":"TRAIT"},"name":"web","namespace":"shop"},"spec":{"ports":[{"port":8080}]}}`, "ServerSideApply"),
				trait(`{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"labels":{"app.oam.dev/component":"web","app.oam.dev/resourceType":"TRAIT"},"name":"web-horizontalpodautoscaler","namespace":"shop"},"spec":{"maxReplicas":"${cluster.claims[id.k8s.io]}"}}`, "Update"),
			}}}}}
	got, applied, err := ForCluster(workSpec(in), overrides, &webParameters, eu1)
	if err != nil || strings.Join(applied, ",") != "eu" {
		t.Fatalf("ForCluster = %v, %v; want override eu applied", applied, err)
	}
	ms := got.Workload.Manifests
	if len(ms) != 4 {
		t.Fatalf("%d manifests, want the 3 rendered and the added trait", len(ms))
	}
	spec := object(t, ms, 0)["spec"].(map[string]any)
	if img := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"]; img != "registry.eu.example.com/web:2" || spec["replicas"] != float64(3) {
		t.Errorf("workload image %v, replicas %v; want the override's values with the cluster's region", img, spec["replicas"])
	}
	if port := object(t, ms, 1)["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["port"]; port != float64(8080) {
		t.Errorf("Service port %v, want the overriding trait's 8080 in the replaced trait's place", port)
	}
	hpa := object(t, ms, 3)
	if hpa["spec"].(map[string]any)["maxReplicas"] != "4f2a" || hpa["metadata"].(map[string]any)["annotations"].(map[string]any)["app.oam.dev/generation"] != "7" {
		t.Errorf("added trait %v, want the cluster's claim and the workload's generation stamp", hpa)
	}
	if string(ms[2].Raw) != string(in[2].Raw) {
		t.Errorf("the other component's manifest changed: %s", ms[2].Raw)
	}
	var configs []string
	for _, c := range got.ManifestConfigs {
		configs = append(configs, c.ResourceIdentifier.Resource+"/"+c.ResourceIdentifier.Name+"="+string(c.UpdateStrategy.Type))
	}
	if want := "deployments/web=Update configmaps/settings=Update services/web=ServerSideApply horizontalpodautoscalers/web-horizontalpodautoscaler=Update"; strings.Join(configs, " ") != want {
		t.Errorf("manifestConfigs %v, want %s", configs, want)
	}
	if len(in) != 3 || strings.Contains(string(in[1].Raw), "8080") {
		t.Errorf("the spec given changed")
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
	gotSpec, applied, err := ForCluster(workSpec(in), overrides, nil, eu1)
	if err != nil {
		t.Fatal(err)
	}
	got := gotSpec.Workload.Manifests
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
	plainSpec, applied, err := ForCluster(workSpec(in), overrides, nil, Cluster{Name: "lab"})
	if err != nil || len(applied) != 0 {
		t.Fatalf("a cluster no override selects: %v applied, %v", applied, err)
	}
	plain := plainSpec.Workload.Manifests
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
		{"a parameter the component does not declare", v1alpha2.Override{Name: "param", Components: []v1alpha2.ComponentOverride{{ComponentName: "web",
			ParameterValues: []v1alpha2.ComponentParameterValue{{Name: "replica", Value: *raw(`2`)}}}}},
			[]string{`override param for cluster eu-1 on Deployment web: component web: parameterValues: "replica" is not a parameter of the component (it has "image", "replicas")`}},
		{"a parameter path the workload does not have", v1alpha2.Override{Name: "param", Components: []v1alpha2.ComponentOverride{{ComponentName: "settings",
			ParameterValues: []v1alpha2.ComponentParameterValue{{Name: "sidecar", Value: *raw(`"x"`)}}}}},
			[]string{`override param for cluster eu-1 on ConfigMap settings: component settings: parameter "sidecar"`}},
		{"a component not rendered", v1alpha2.Override{Name: "comp", Components: []v1alpha2.ComponentOverride{{ComponentName: "api",
			ParameterValues: []v1alpha2.ComponentParameterValue{{Name: "image", Value: *raw(`"x"`)}}}}},
			[]string{"override comp for cluster eu-1: components: component api renders no workload"}},
	} {
		_, _, err := ForCluster(workSpec(manifests(t)), []v1alpha2.Override{c.o}, &webParameters, eu1)
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
