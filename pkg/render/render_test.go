package render

import (
	"errors"
	appsv1 "k8s.io/api/apps/v1"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

const webWorkload = `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":1,"template":{"spec":{"containers":[{"name":"web","image":"nginx:1"}]}}}}`

func raw(s string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(s)} }

// fixture is an AppConfig "shop" (generation 3) of component "web", whose latest revision is web-v2,
// with a ManualScalerTrait definition (workloadRefPath spec.workloadRef) and a revision-enabled
// RolloutTrait definition.
func renderInput(entry v1alpha2.ApplicationConfigurationComponent) Input {
	app := &v1alpha2.ApplicationConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "prod", Generation: 3},
		Spec:       v1alpha2.ApplicationConfigurationSpec{Components: []v1alpha2.ApplicationConfigurationComponent{entry}},
	}
	spec := &v1alpha2.ComponentSpec{
		Workload: raw(webWorkload),
		Parameters: []v1alpha2.ComponentParameter{
			{Name: "image", FieldPaths: []string{"spec.template.spec.containers[0].image"}, Required: true},
			{Name: "replicas", FieldPaths: []string{"spec.replicas"}},
		},
	}
	defs := map[string]*v1alpha2.TraitDefinition{
		"ManualScalerTrait":    {ObjectMeta: metav1.ObjectMeta{Name: "manualscalertraits.core.oam.dev"}, Spec: v1alpha2.TraitDefinitionSpec{WorkloadRefPath: "spec.workloadRef"}},
		"RolloutTrait":         {ObjectMeta: metav1.ObjectMeta{Name: "rollouttraits.core.oam.dev"}, Spec: v1alpha2.TraitDefinitionSpec{RevisionEnabled: true, WorkloadRefPath: "spec.targetRef"}},
		"NodeSelectorTrait":    {ObjectMeta: metav1.ObjectMeta{Name: "nodeselectortraits.core.oam.dev"}, Spec: v1alpha2.TraitDefinitionSpec{Patch: true}},
		"SecurityContextTrait": {ObjectMeta: metav1.ObjectMeta{Name: "securitycontexttraits.core.oam.dev"}, Spec: v1alpha2.TraitDefinitionSpec{Patch: true}},
	}
	return Input{
		App: app,
		Component: func(e v1alpha2.ApplicationConfigurationComponent) (Resolved, error) {
			switch {
			case e.ComponentName == "web":
				return Resolved{ComponentName: "web", RevisionName: "web-v2", Spec: spec}, nil
			case e.RevisionName == "web-v1":
				return Resolved{ComponentName: "web", RevisionName: "web-v1", Spec: spec}, nil
			}
			return Resolved{}, errors.New("no such component or revision")
		},
		TraitDefinition: func(t *unstructured.Unstructured) (*v1alpha2.TraitDefinition, error) {
			if d, ok := defs[t.GetKind()]; ok {
				return d, nil
			}
			return nil, errors.New("no TraitDefinition for this kind")
		},
	}
}

func trait(kind, spec string) v1alpha2.ComponentTrait {
	return v1alpha2.ComponentTrait{Trait: raw(`{"apiVersion":"core.oam.dev/v1alpha2","kind":"` + kind + `","spec":` + spec + `}`)}
}

func TestRenderWorkloadWithParametersLabelsAndTraits(t *testing.T) {
	in := renderInput(v1alpha2.ApplicationConfigurationComponent{
		ComponentName:   "web",
		ParameterValues: []v1alpha2.ComponentParameterValue{{Name: "image", Value: raw(`"nginx:2"`)}, {Name: "replicas", Value: raw(`3`)}},
		Traits:          []v1alpha2.ComponentTrait{trait("ManualScalerTrait", `{"replicaCount":3}`)},
	})
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	w := out[0].Workload
	if w.GetName() != "web" || w.GetNamespace() != "prod" {
		t.Errorf("workload %s/%s, want prod/web (named after the component)", w.GetNamespace(), w.GetName())
	}
	image, _, _ := unstructured.NestedSlice(w.Object, "spec", "template", "spec", "containers")
	if got := image[0].(map[string]any)["image"]; got != "nginx:2" {
		t.Errorf("image = %v, want the parameter's nginx:2", got)
	}
	if got, _, _ := unstructured.NestedFieldNoCopy(w.Object, "spec", "replicas"); got != float64(3) {
		t.Errorf("replicas = %v (%T), want the number 3", got, got)
	}
	wantLabels := map[string]string{v1alpha2.LabelAppName: "shop", v1alpha2.LabelComponent: "web", v1alpha2.LabelRevision: "web-v2", v1alpha2.LabelResourceType: "WORKLOAD"}
	for k, v := range wantLabels {
		if w.GetLabels()[k] != v {
			t.Errorf("workload label %s = %q, want %q", k, w.GetLabels()[k], v)
		}
	}
	if w.GetAnnotations()[v1alpha2.AnnotationAppGen] != "3" {
		t.Errorf("generation annotation = %q, want 3", w.GetAnnotations()[v1alpha2.AnnotationAppGen])
	}
	tr := out[0].Traits[0]
	if tr.GetName() != "web-manualscalertrait" || tr.GetLabels()[v1alpha2.LabelResourceType] != "TRAIT" || tr.GetNamespace() != "prod" {
		t.Errorf("trait %s/%s labels %v", tr.GetNamespace(), tr.GetName(), tr.GetLabels())
	}
	ref, _, _ := unstructured.NestedMap(tr.Object, "spec", "workloadRef")
	if ref["apiVersion"] != "apps/v1" || ref["kind"] != "Deployment" || ref["name"] != "web" {
		t.Errorf("workloadRef = %v, want the Deployment web", ref)
	}
}

// Component revisions: a revision-enabled trait, or a pinned revision, names the workload after the revision.
func TestRenderNamesTheWorkloadAfterTheRevisionWhenRevisionsMatter(t *testing.T) {
	image := []v1alpha2.ComponentParameterValue{{Name: "image", Value: raw(`"nginx:2"`)}}
	out, err := Render(renderInput(v1alpha2.ApplicationConfigurationComponent{ComponentName: "web", ParameterValues: image,
		Traits: []v1alpha2.ComponentTrait{trait("RolloutTrait", `{}`)}}))
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Workload.GetName() != "web-v2" {
		t.Errorf("workload with a revision-enabled trait = %s, want web-v2", out[0].Workload.GetName())
	}
	if ref, _, _ := unstructured.NestedString(out[0].Traits[0].Object, "spec", "targetRef", "name"); ref != "web-v2" {
		t.Errorf("trait's reference = %s, want web-v2", ref)
	}
	out, err = Render(renderInput(v1alpha2.ApplicationConfigurationComponent{RevisionName: "web-v1", ParameterValues: image}))
	if err != nil {
		t.Fatal(err)
	}
	if w := out[0].Workload; w.GetName() != "web-v1" || w.GetLabels()[v1alpha2.LabelRevision] != "web-v1" {
		t.Errorf("pinned workload = %s (revision label %s), want web-v1", w.GetName(), w.GetLabels()[v1alpha2.LabelRevision])
	}
}

// withPatches makes in's patch traits publish the patches given by trait kind (a missing kind is not
// Ready) and finds patched specs among revisions by content, naming a new one web-v10, web-v11, ...
// Rendering only reads: record writes what it asks for, as the hub does.
func withPatches(in Input, published map[string]string) (Input, map[string]*v1alpha2.ComponentSpec) {
	revisions := map[string]*v1alpha2.ComponentSpec{}
	in.PublishedPatches = func(component string, traits []*unstructured.Unstructured) ([]Patch, error) {
		var out []Patch
		var waiting []string
		for _, t := range traits {
			p, ok := published[t.GetKind()]
			if !ok {
				waiting = append(waiting, t.GetKind())
				continue
			}
			out = append(out, Patch{Source: t.GetKind(), Data: []byte(p)})
		}
		if len(waiting) > 0 {
			return nil, &PatchesPendingError{Component: component, Waiting: waiting}
		}
		return out, nil
	}
	in.PatchedRevision = func(component string, spec *v1alpha2.ComponentSpec) (string, bool, error) {
		for name, s := range revisions {
			if string(s.Workload.Raw) == string(spec.Workload.Raw) {
				return name, false, nil
			}
		}
		return "web-v" + strconv.Itoa(10+len(revisions)), true, nil
	}
	return in, revisions
}

// record records the new revisions rendering named, as the hub does after rendering.
func record(revisions map[string]*v1alpha2.ComponentSpec, rendered []Component) {
	for _, rc := range rendered {
		if rc.NewRevision != nil {
			revisions[rc.RevisionName] = rc.NewRevision
		}
	}
}

func TestRenderMergesEveryPatchIntoTheWorkloadAsARevisionOfItsOwn(t *testing.T) {
	entry := v1alpha2.ApplicationConfigurationComponent{ComponentName: "web",
		ParameterValues: []v1alpha2.ComponentParameterValue{{Name: "image", Value: raw(`"nginx:2"`)}},
		Traits: []v1alpha2.ComponentTrait{
			trait("NodeSelectorTrait", `{"disktype":"ssd"}`),
			trait("SecurityContextTrait", `{"runAsNonRoot":true}`),
			trait("RolloutTrait", `{}`),
		}}
	in, revisions := withPatches(renderInput(entry), map[string]string{
		"NodeSelectorTrait":    `{"spec":{"template":{"spec":{"nodeSelector":{"disktype":"ssd"}}}}}`,
		"SecurityContextTrait": `[{"op":"add","path":"/spec/template/spec/securityContext","value":{"runAsNonRoot":true}}]`,
	})
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	rc := out[0]
	if rc.RevisionName != "web-v10" || rc.NewRevision == nil || len(revisions) != 0 {
		t.Fatalf("revision %s (new: %t, %d recorded by rendering), want the one new patched revision web-v10, left to the caller to record",
			rc.RevisionName, rc.NewRevision != nil, len(revisions))
	}
	record(revisions, out)
	w := rc.Workload
	if w.GetName() != "web-v10" {
		t.Errorf("workload %s: a revision-enabled trait wants it named after the patched revision web-v10", w.GetName())
	}
	if v, _, _ := unstructured.NestedString(w.Object, "spec", "template", "spec", "nodeSelector", "disktype"); v != "ssd" {
		t.Errorf("nodeSelector patch missing: %v", w.Object)
	}
	if v, _, _ := unstructured.NestedBool(w.Object, "spec", "template", "spec", "securityContext", "runAsNonRoot"); !v {
		t.Errorf("securityContext patch missing: %v", w.Object)
	}
	containers, _, _ := unstructured.NestedSlice(w.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 || containers[0].(map[string]any)["image"] != "nginx:2" {
		t.Errorf("containers %v: want the one container with the parameter's image", containers)
	}
	// The recorded revision is a component spec: the patched workload and the component's parameters.
	if spec := revisions["web-v10"]; len(spec.Parameters) != 2 || !strings.Contains(string(spec.Workload.Raw), `"disktype":"ssd"`) {
		t.Errorf("recorded spec %s with %d parameters", spec.Workload.Raw, len(spec.Parameters))
	}
	if len(rc.Traits) != 1 || rc.Traits[0].GetKind() != "RolloutTrait" || len(rc.TraitStrategies) != 1 {
		t.Errorf("delivered traits %d (strategies %d), want only the RolloutTrait", len(rc.Traits), len(rc.TraitStrategies))
	}
	if len(rc.PatchTraits) != 2 || rc.PatchTraits[0].GetName() != "shop-web-nodeselectortrait" || rc.PatchTraits[0].GetNamespace() != "prod" ||
		rc.PatchTraits[0].GetLabels()[v1alpha2.LabelAppConfigName] != "shop" {
		t.Errorf("patch-trait objects %v: want them named after the AppConfig and component, in its namespace, labelled back to it", rc.PatchTraits)
	}
	if ref, _, _ := unstructured.NestedString(rc.Traits[0].Object, "spec", "targetRef", "name"); ref != "web-v10" {
		t.Errorf("rollout targets %q, want web-v10", ref)
	}

	// Rendering again finds the same revision; a changed patch makes one more.
	if out, err = Render(in); err != nil || out[0].RevisionName != "web-v10" || out[0].NewRevision != nil {
		t.Fatalf("again: %v, %v; want web-v10, recorded already", out, err)
	}
	in2, _ := withPatches(renderInput(entry), map[string]string{
		"NodeSelectorTrait":    `{"spec":{"template":{"spec":{"nodeSelector":{"disktype":"nvme"}}}}}`,
		"SecurityContextTrait": `{"spec":{"template":{"spec":{"securityContext":{"runAsNonRoot":true}}}}}`,
	})
	in2.PatchedRevision = in.PatchedRevision
	if out, err = Render(in2); err != nil || out[0].RevisionName != "web-v11" {
		t.Fatalf("changed patch: revision %v, %v; want web-v11", out[0].RevisionName, err)
	}
}

func TestRenderHoldsTheWorkloadUntilEveryPatchTraitIsReady(t *testing.T) {
	in, revisions := withPatches(renderInput(v1alpha2.ApplicationConfigurationComponent{ComponentName: "web",
		ParameterValues: []v1alpha2.ComponentParameterValue{{Name: "image", Value: raw(`"nginx:2"`)}},
		Traits: []v1alpha2.ComponentTrait{
			trait("NodeSelectorTrait", `{"disktype":"ssd"}`),
			trait("SecurityContextTrait", `{"runAsNonRoot":true}`),
		}}), map[string]string{"NodeSelectorTrait": `{"spec":{"template":{"spec":{"nodeSelector":{"disktype":"ssd"}}}}}`})
	out, err := Render(in)
	var pending *PatchesPendingError
	if !errors.As(err, &pending) || out != nil || len(revisions) != 0 {
		t.Fatalf("got %v, %v (%d revisions); want nothing rendered and a PatchesPendingError", out, err, len(revisions))
	}
	if len(pending.Traits) != 2 || pending.Traits[1].GetKind() != "SecurityContextTrait" {
		t.Errorf("patch-trait objects to publish: %v, want both of the component's", pending.Traits)
	}
	if len(pending.Waiting) != 1 || pending.Waiting[0] != "SecurityContextTrait" {
		t.Errorf("waiting for %v, want the SecurityContextTrait", pending.Waiting)
	}
}

func TestRenderMergesInlineWorkloadPatches(t *testing.T) {
	sidecar := `{"apiVersion":"core.oam.dev/v1alpha2","kind":"WorkloadPatch","spec":{"spec":{"template":{"spec":{"containers":[{"name":"proxy","image":"envoy:1"}]}}}}}`
	in, revisions := withPatches(renderInput(v1alpha2.ApplicationConfigurationComponent{ComponentName: "web",
		ParameterValues: []v1alpha2.ComponentParameterValue{{Name: "image", Value: raw(`"nginx:2"`)}},
		Traits:          []v1alpha2.ComponentTrait{{Trait: raw(sidecar)}}}), nil)
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	rc := out[0]
	if len(rc.Traits) != 0 || len(rc.PatchTraits) != 0 || rc.RevisionName != "web-v10" || rc.NewRevision == nil || len(revisions) != 0 {
		t.Errorf("traits %d, patch traits %d, revision %s: an inline patch is neither delivered nor published, and makes a revision",
			len(rc.Traits), len(rc.PatchTraits), rc.RevisionName)
	}
	// A Deployment is patched strategically: the sidecar joins the container list instead of replacing it.
	containers, _, _ := unstructured.NestedSlice(rc.Workload.Object, "spec", "template", "spec", "containers")
	var names []string
	for _, c := range containers {
		names = append(names, c.(map[string]any)["name"].(string))
	}
	if strings.Join(names, ",") != "proxy,web" && strings.Join(names, ",") != "web,proxy" {
		t.Errorf("containers %v, want web and proxy", names)
	}
	if rc.Workload.GetName() != "web" {
		t.Errorf("workload %s: without a revision-enabled trait it stays named after the component", rc.Workload.GetName())
	}
}

func TestRenderRefusesAPatchThatDoesNotApply(t *testing.T) {
	in, _ := withPatches(renderInput(v1alpha2.ApplicationConfigurationComponent{ComponentName: "web",
		ParameterValues: []v1alpha2.ComponentParameterValue{{Name: "image", Value: raw(`"nginx:2"`)}},
		Traits:          []v1alpha2.ComponentTrait{trait("NodeSelectorTrait", `{}`)}}),
		map[string]string{"NodeSelectorTrait": `[{"op":"replace","path":"/spec/nothing/here","value":1}]`})
	_, err := Render(in)
	var re *Error
	if !errors.As(err, &re) || re.Reason != "InvalidPatch" || !strings.Contains(re.Message, "NodeSelectorTrait") {
		t.Fatalf("got %v, want an InvalidPatch error naming the trait", err)
	}
}

func TestRenderRefusesWhatCannotBeRendered(t *testing.T) {
	image := v1alpha2.ComponentParameterValue{Name: "image", Value: raw(`"nginx:2"`)}
	cases := []struct {
		name   string
		entry  v1alpha2.ApplicationConfigurationComponent
		reason string
		says   string
	}{
		{"missing component", v1alpha2.ApplicationConfigurationComponent{ComponentName: "nope"}, "ComponentNotFound", "nope"},
		{"unknown parameter", v1alpha2.ApplicationConfigurationComponent{ComponentName: "web",
			ParameterValues: []v1alpha2.ComponentParameterValue{image, {Name: "colour", Value: raw(`"red"`)}}}, "UnknownParameter", `"colour"`},
		{"missing required parameter", v1alpha2.ApplicationConfigurationComponent{ComponentName: "web"}, "MissingRequiredParameter", `"image"`},
		{"trait without definition", v1alpha2.ApplicationConfigurationComponent{ComponentName: "web",
			ParameterValues: []v1alpha2.ComponentParameterValue{image}, Traits: []v1alpha2.ComponentTrait{trait("Mystery", `{}`)}}, "TraitDefinitionNotFound", "Mystery"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := Render(renderInput(c.entry))
			var re *Error
			if !errors.As(err, &re) || re.Reason != c.reason || !strings.Contains(re.Message, c.says) {
				t.Fatalf("error = %v, want reason %s mentioning %s", err, c.reason, c.says)
			}
			if out != nil {
				t.Errorf("something was rendered: %v", out)
			}
		})
	}
}

// A workload of a kind the hub knows is cluster-scoped is not stamped with the AppConfig's namespace, so
// that the work names the object the agent applies (and its status matches it); its namespaced traits
// still get the AppConfig's namespace. A kind the hub does not know keeps it: the agent decides.
func TestRenderLeavesClusterScopedKindsOutOfTheNamespace(t *testing.T) {
	in := renderInput(v1alpha2.ApplicationConfigurationComponent{ComponentName: "web",
		Traits: []v1alpha2.ComponentTrait{{Trait: raw(`{"apiVersion":"core.oam.dev/v1alpha2","kind":"ManualScalerTrait","spec":{"replicaCount":2}}`)}}})
	grab := &v1alpha2.ComponentSpec{Workload: raw(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding",` +
		`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},"subjects":[{"kind":"ServiceAccount","name":"default","namespace":"prod"}]}`)}
	in.Component = func(v1alpha2.ApplicationConfigurationComponent) (Resolved, error) {
		return Resolved{ComponentName: "web", RevisionName: "web-v2", Spec: grab}, nil
	}
	for _, tc := range []struct {
		name          string
		clusterScoped func(schema.GroupVersionKind) bool
		workloadNS    string
	}{
		{"a kind the hub knows is cluster-scoped", func(gvk schema.GroupVersionKind) bool { return gvk.Kind == "ClusterRoleBinding" }, ""},
		{"a kind the hub does not know", nil, "prod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in.ClusterScoped = tc.clusterScoped
			out, err := Render(in)
			if err != nil {
				t.Fatal(err)
			}
			if ns := out[0].Workload.GetNamespace(); ns != tc.workloadNS {
				t.Errorf("the ClusterRoleBinding is rendered in namespace %q, want %q", ns, tc.workloadNS)
			}
			if ns := out[0].Traits[0].GetNamespace(); ns != "prod" {
				t.Errorf("its namespaced trait is rendered in namespace %q, want the AppConfig's", ns)
			}
		})
	}
}

// What cannot be a ManifestWork is not built: manifests over OCM's 500 KiB (their protobuf size, as its
// webhook counts it), named by the largest component, and a work of no manifest at all.
func TestBuildManifestWorkRefusesWhatOCMWouldRefuse(t *testing.T) {
	app := &v1alpha2.ApplicationConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "prod"}}
	configMap := func(name string, size int) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "prod"}, "data": map[string]any{"blob": strings.Repeat("x", size)}}}
	}
	small := Component{ComponentName: "small", Workload: configMap("small", 10<<10)}
	if _, err := BuildManifestWork(app, "c1", []Component{small}, ApplyOnceOff, nil); err != nil {
		t.Fatalf("10 KiB: %v", err)
	}
	huge := Component{ComponentName: "huge", Workload: configMap("huge", 400<<10)}
	medium := Component{ComponentName: "medium", Workload: configMap("medium", 150<<10)}
	_, err := BuildManifestWork(app, "c1", []Component{small, huge, medium}, ApplyOnceOff, nil)
	var re *Error
	if !errors.As(err, &re) || re.Reason != "ManifestsTooLarge" || re.Component != "huge" || !strings.Contains(re.Message, "500 KiB") {
		t.Errorf("560 KiB of manifests: %v, want ManifestsTooLarge naming component huge and the limit", err)
	}
	if _, err := BuildManifestWork(app, "c1", nil, ApplyOnceOff, nil); !errors.As(err, &re) || re.Reason != "NothingToDeliver" {
		t.Errorf("no component: %v, want NothingToDeliver", err)
	}
}

// A spec a component's revision holds is that revision; another is the revision after the newest, as
// ferry-hub records it, whatever order the revisions are listed in.
func TestComponentRevisionForFindsOrNumbersTheRevision(t *testing.T) {
	rev := func(name string, n int64, hash string) appsv1.ControllerRevision {
		return appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha2.LabelComponentSpecHash: hash}}, Revision: n}
	}
	revs := []appsv1.ControllerRevision{rev("web-v3", 3, "c"), rev("web-v1", 1, "a")}
	if name, isNew := ComponentRevisionFor("web", "a", revs); name != "web-v1" || isNew {
		t.Errorf("a spec web-v1 holds: %s, new %t", name, isNew)
	}
	if name, isNew := ComponentRevisionFor("web", "d", revs); name != "web-v4" || !isNew {
		t.Errorf("a new spec: %s, new %t; want web-v4, new", name, isNew)
	}
	if name, _ := ComponentRevisionFor("web", "d", nil); name != "web-v1" {
		t.Errorf("the first spec: %s, want web-v1", name)
	}
}
