package render

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// The traits an override gives a component are rendered with the revision as the entry's own are: one
// replacing the entry's trait of its kind takes its name, a new kind is named after the component, each
// in the workload's namespace, pointing at the workload, labelled, under the hub's default strategy
// unless it names one — with the cluster facts it names left for each cluster, and without the
// generation stamp, which each cluster's work takes from its workload. Parameter values record the
// fields of the parameters they name. An override that cannot be rendered is recorded as invalid, for
// the clusters it selects to fail on, and the others beside it are rendered.
func TestOverridesRenderTheTraitsOfComponentOverrides(t *testing.T) {
	in := renderInput(v1alpha2.ApplicationConfigurationComponent{ComponentName: "web", ParameterValues: []v1alpha2.ComponentParameterValue{{Name: "image", Value: raw(`"nginx:1"`)}},
		Traits: []v1alpha2.ComponentTrait{trait("ManualScalerTrait", `{"replicaCount":1}`)}})
	rendered, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	scaler := trait("ManualScalerTrait", `{"replicaCount":"${cluster.claims[size]}"}`)
	second := trait("ManualScalerTrait", `{"replicaCount":9}`)
	second.Trait.Raw = []byte(strings.Replace(string(second.Trait.Raw), `"kind"`, `"metadata":{"name":"extra"},"kind"`, 1))
	second.UpdateStrategy = "ServerSideApply"
	in.App.Spec.Overrides = []v1alpha2.Override{{Name: "eu", Components: []v1alpha2.ComponentOverride{{ComponentName: "web",
		ParameterValues: []v1alpha2.ComponentParameterValue{{Name: "replicas", Value: raw(`3`)}}, Traits: []v1alpha2.ComponentTrait{scaler, second}}}}}
	recorded, comps, err := Overrides(in, rendered, ApplyOnceOff, nil)
	if err != nil {
		t.Fatal(err)
	}
	traits := recorded[0].Components[0].Traits
	var obj map[string]any
	if err := json.Unmarshal(traits[0].Trait.Raw, &obj); err != nil {
		t.Fatal(err)
	}
	md := obj["metadata"].(map[string]any)
	spec := obj["spec"].(map[string]any)
	if md["name"] != "web-manualscalertrait" || md["namespace"] != "prod" || md["labels"].(map[string]any)[v1alpha2.LabelComponent] != "web" ||
		md["annotations"] != nil || spec["replicaCount"] != "${cluster.claims[size]}" || spec["workloadRef"].(map[string]any)["name"] != "web" {
		t.Errorf("the replacing trait rendered as %s", traits[0].Trait.Raw)
	}
	if traits[0].UpdateStrategy != "Update" || traits[1].UpdateStrategy != "ServerSideApply" || !strings.Contains(string(traits[1].Trait.Raw), `"name":"extra"`) {
		t.Errorf("strategies %s, %s and second trait %s; want the hub's default, the one named, and its own name", traits[0].UpdateStrategy, traits[1].UpdateStrategy, traits[1].Trait.Raw)
	}
	if p := comps.Parameters["web"]; len(p) != 1 || p[0].FieldPaths[0] != "spec.replicas" || comps.Resources["ManualScalerTrait.core.oam.dev"] != "manualscalertraits" {
		t.Errorf("recorded for the components: %+v", comps)
	}
	if string(in.App.Spec.Overrides[0].Components[0].Traits[0].Trait.Raw) != string(scaler.Trait.Raw) {
		t.Errorf("the AppConfig's override changed")
	}

	for _, c := range []struct {
		name string
		co   v1alpha2.ComponentOverride
		want string
	}{
		{"a component not in the AppConfig", v1alpha2.ComponentOverride{ComponentName: "api"}, "component api is not in spec.components"},
		{"an unknown parameter", v1alpha2.ComponentOverride{ComponentName: "web", ParameterValues: []v1alpha2.ComponentParameterValue{{Name: "replica", Value: raw(`1`)}}},
			`parameter "replica" is not a parameter of the component (it has "image", "replicas")`},
		{"a revision-enabled trait", v1alpha2.ComponentOverride{ComponentName: "web", Traits: []v1alpha2.ComponentTrait{trait("RolloutTrait", `{}`)}},
			"component web, traits[0]: RolloutTrait: its definition rollouttraits.core.oam.dev is a patch trait or revision-enabled"},
		{"a patch trait", v1alpha2.ComponentOverride{ComponentName: "web", Traits: []v1alpha2.ComponentTrait{trait("NodeSelectorTrait", `{}`)}}, "is a patch trait or revision-enabled"},
		{"an inline patch", v1alpha2.ComponentOverride{ComponentName: "web", Traits: []v1alpha2.ComponentTrait{trait(InlinePatchKind, `{}`)}}, "a WorkloadPatch changes the component's revision"},
		{"a trait without a definition", v1alpha2.ComponentOverride{ComponentName: "web", Traits: []v1alpha2.ComponentTrait{trait("Unknown", `{}`)}}, "no TraitDefinition for this kind"},
		{"a name from a cluster fact", v1alpha2.ComponentOverride{ComponentName: "web", Traits: []v1alpha2.ComponentTrait{{Trait: raw(
			`{"apiVersion":"core.oam.dev/v1alpha2","kind":"ManualScalerTrait","metadata":{"name":"s-${cluster.name}"}}`)}}}, "may not take a cluster's facts"},
	} {
		fine := v1alpha2.Override{Name: "fine", Components: []v1alpha2.ComponentOverride{{ComponentName: "web", Traits: []v1alpha2.ComponentTrait{trait("ManualScalerTrait", `{}`)}}}}
		in.App.Spec.Overrides = []v1alpha2.Override{{Name: "eu", Components: []v1alpha2.ComponentOverride{c.co}}, fine}
		recorded, comps, err := Overrides(in, rendered, ApplyOnceOff, nil)
		if err != nil || !strings.Contains(comps.Invalid["eu"], c.want) || len(comps.Invalid) != 1 {
			t.Errorf("%s: %v, invalid %v; want override eu invalid saying %q, and only it", c.name, err, comps.Invalid, c.want)
		} else if !strings.Contains(string(recorded[1].Components[0].Traits[0].Trait.Raw), `"name":"web-manualscalertrait"`) {
			t.Errorf("%s: the valid override beside it not rendered: %s", c.name, recorded[1].Components[0].Traits[0].Trait.Raw)
		}
	}
}
