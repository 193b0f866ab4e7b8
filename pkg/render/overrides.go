package render

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/fieldpath"
	"github.com/ferry-mc/ferry/pkg/override"
)

// Overrides renders what the AppConfig's overrides change of its components (Override.Components), for
// the revision of rendered, so that the revision records it and a cluster's work stays a pure function
// of the revision and the cluster's facts: the overrides as the revision records them — each trait of
// theirs rendered as the entry's own traits are (named, in the workload's namespace, referring to the
// workload, labelled, under its update strategy), its strings still naming cluster facts — and what
// their parameter values need of the components (override.Components; nil when no override changes a
// component). An override that names a component the AppConfig does not have, a parameter the
// component does not declare, or a trait that cannot be rendered or would change the component's
// revision is recorded as invalid (Components.Invalid): it fails on the clusters it selects, which
// keep what they have, and the others get the revision.
func Overrides(in Input, rendered []Component, mode ApplyOnceOnly, mapper meta.RESTMapper) ([]v1alpha2.Override, *override.Components, error) {
	overrides := in.App.Spec.Overrides
	if !slices.ContainsFunc(overrides, func(o v1alpha2.Override) bool { return len(o.Components) > 0 }) {
		return overrides, nil, nil
	}
	comps := &override.Components{Parameters: map[string][]v1alpha2.ComponentParameter{}, Resources: map[string]string{}}
	out := make([]v1alpha2.Override, len(overrides))
	for i := range overrides {
		o := overrides[i].DeepCopy()
		if err := renderComponentOverrides(in, rendered, o, comps, mode, mapper); err != nil {
			if comps.Invalid == nil {
				comps.Invalid = map[string]string{}
			}
			comps.Invalid[o.Name] = err.Error()
			o = overrides[i].DeepCopy() // as written: it is not delivered anywhere
		}
		out[i] = *o
	}
	return out, comps, nil
}

// renderComponentOverrides renders the traits of o's components in place, and notes in comps what its
// parameter values need.
func renderComponentOverrides(in Input, rendered []Component, o *v1alpha2.Override, comps *override.Components, mode ApplyOnceOnly, mapper meta.RESTMapper) error {
	for j := range o.Components {
		co := &o.Components[j]
		k := slices.IndexFunc(rendered, func(rc Component) bool { return rc.ComponentName == co.ComponentName })
		if k < 0 {
			return fmt.Errorf("component %s is not in spec.components", co.ComponentName)
		}
		rc := rendered[k]
		for _, v := range co.ParameterValues {
			p := slices.IndexFunc(rc.Parameters, func(p v1alpha2.ComponentParameter) bool { return p.Name == v.Name })
			if p < 0 {
				return fmt.Errorf("component %s: parameter %q is not a parameter of the component (it has %s)", co.ComponentName, v.Name, override.ParameterNames(rc.Parameters))
			}
			if !json.Valid(v.Value.Raw) {
				return fmt.Errorf("component %s: parameter %q: its value is not JSON", co.ComponentName, v.Name)
			}
			if !slices.ContainsFunc(comps.Parameters[rc.ComponentName], func(q v1alpha2.ComponentParameter) bool { return q.Name == v.Name }) {
				comps.Parameters[rc.ComponentName] = append(comps.Parameters[rc.ComponentName], rc.Parameters[p])
			}
		}
		kinds := map[string]int{}
		for n := range co.Traits {
			trait, err := overrideTrait(in, rc, &co.Traits[n], kinds, mode)
			if err != nil {
				return fmt.Errorf("component %s, traits[%d]: %w", co.ComponentName, n, err)
			}
			comps.Resources[override.ResourceKey(trait)] = ResourceOf(trait, mapper)
		}
	}
	return nil
}

// overrideTrait renders t, a trait an override gives rc, in place, and returns it decoded.
func overrideTrait(in Input, rc Component, t *v1alpha2.ComponentTrait, kinds map[string]int, mode ApplyOnceOnly) (*unstructured.Unstructured, error) {
	trait := &unstructured.Unstructured{}
	if err := json.Unmarshal(t.Trait.Raw, &trait.Object); err != nil || trait.Object == nil {
		return nil, fmt.Errorf("not an object: %v", err)
	}
	for _, id := range []string{trait.GetAPIVersion(), trait.GetKind(), trait.GetName(), trait.GetNamespace()} {
		if strings.Contains(id, "${") {
			return nil, fmt.Errorf("%s %s: its apiVersion, kind, name and namespace say which object it is on every cluster, and may not take a cluster's facts", trait.GetKind(), trait.GetName())
		}
	}
	if isInlinePatch(trait) {
		return nil, fmt.Errorf("a %s changes the component's revision, the same on every cluster: put it in spec.components, or change the cluster's objects with the override's patches", InlinePatchKind)
	}
	def, err := in.TraitDefinition(trait)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", trait.GetAPIVersion(), trait.GetKind(), err)
	}
	if def.Spec.Patch || def.Spec.RevisionEnabled {
		return nil, fmt.Errorf("%s: its definition %s is a patch trait or revision-enabled, which changes the component's revision, the same on every cluster: put it in spec.components", trait.GetKind(), def.Name)
	}
	gk := trait.GroupVersionKind().GroupKind()
	if trait.GetName() == "" {
		// The trait it replaces keeps its name, so that the agent updates it instead of replacing it.
		if i := slices.IndexFunc(rc.Traits, func(have *unstructured.Unstructured) bool { return have.GroupVersionKind().GroupKind() == gk }); i >= 0 {
			trait.SetName(rc.Traits[i].GetName())
		} else {
			trait.SetName(uniqueName(kinds, rc.ComponentName, trait.GetKind()))
		}
	}
	if trait.GetNamespace() == "" && !in.clusterScoped(trait) {
		trait.SetNamespace(cmp.Or(rc.Workload.GetNamespace(), in.App.Namespace))
	}
	if path := def.Spec.WorkloadRefPath; path != "" {
		ref := map[string]any{"apiVersion": rc.Workload.GetAPIVersion(), "kind": rc.Workload.GetKind(), "name": rc.Workload.GetName()}
		if err := fieldpath.Set(trait.Object, path, ref); err != nil {
			return nil, fmt.Errorf("%s: workloadRefPath of its definition %s: %w", trait.GetKind(), def.Name, err)
		}
	}
	stamp(trait, in.App, rc, v1alpha2.ResourceTypeTrait)
	// The generation stamp is the workload's, put in for each cluster (override.Apply): the revision
	// records what does not change with the AppConfig's generation.
	if ann := trait.GetAnnotations(); len(ann) > 1 {
		delete(ann, v1alpha2.AnnotationAppGen)
		trait.SetAnnotations(ann)
	} else {
		unstructured.RemoveNestedField(trait.Object, "metadata", "annotations")
	}
	raw, err := json.Marshal(trait.Object)
	if err != nil {
		return nil, err
	}
	t.Trait.Raw, t.Trait.Object = raw, nil
	t.UpdateStrategy = cmp.Or(t.UpdateStrategy, v1alpha2.UpdateStrategy(mode.DefaultStrategy()))
	return trait, nil
}
