package override

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/fieldpath"
)

// Components is what overrides of components (Override.Components) need of the revision whose
// components they change, recorded with it: the revision renders their traits beforehand (package
// render), and this holds the rest, so that what a cluster gets stays a pure function of the revision
// and the cluster's facts even after the Components have changed.
type Components struct {
	// Parameters of each component an override gives parameter values, as its revision declares them:
	// the fields each value is written to.
	Parameters map[string][]v1alpha2.ComponentParameter `json:"parameters,omitempty"`
	// Resources are the resource names of the kinds of the traits overrides give components, by
	// Kind.group: the manifestConfigs that carry a trait's update strategy identify it by them.
	Resources map[string]string `json:"resources,omitempty"`
	// Invalid are the overrides, by name, that cannot change components as they say (a component or
	// parameter the AppConfig does not have, a trait with no definition), and why: each fails on the
	// clusters it selects.
	Invalid map[string]string `json:"invalid,omitempty"`
}

// ResourceKey is how Components.Resources names the kind of obj.
func ResourceKey(obj *unstructured.Unstructured) string {
	gk := obj.GroupVersionKind().GroupKind()
	return gk.Kind + "." + gk.Group
}

// spec is a work's spec being changed by overrides: its manifests decoded, which of them changed, and
// its manifestConfigs.
type spec struct {
	objs    []*unstructured.Unstructured
	changed []bool
	configs []workv1.ManifestConfigOption
	comps   *Components
}

// applyComponent changes what co's component renders: its workload's parameter values, and its traits.
func (s *spec) applyComponent(co v1alpha2.ComponentOverride) error {
	workloads := s.indexes(func(obj *unstructured.Unstructured) bool {
		return isOf(obj, co.ComponentName, v1alpha2.ResourceTypeWorkload)
	})
	if len(workloads) == 0 {
		return fmt.Errorf("components: component %s renders no workload: it is not in spec.components", co.ComponentName)
	}
	if len(co.ParameterValues) > 0 {
		var params []v1alpha2.ComponentParameter
		if s.comps != nil {
			params = s.comps.Parameters[co.ComponentName]
		}
		for _, i := range workloads {
			if err := setParameterValues(s.objs[i], params, co.ParameterValues); err != nil {
				return &Error{Object: objectName(s.objs[i]), Err: fmt.Errorf("component %s: %w", co.ComponentName, err)}
			}
			s.changed[i] = true
		}
	}
	// Traits are stamped as the workload is: the generation of the AppConfig that rendered the revision.
	generation, stamped := s.objs[workloads[0]].GetAnnotations()[v1alpha2.AnnotationAppGen]
	for n, t := range co.Traits {
		trait := &unstructured.Unstructured{}
		if err := trait.UnmarshalJSON(t.Trait.Raw); err != nil {
			return fmt.Errorf("component %s, traits[%d]: %w", co.ComponentName, n, err)
		}
		if stamped {
			ann := trait.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[v1alpha2.AnnotationAppGen] = generation
			trait.SetAnnotations(ann)
		}
		cfg := workv1.ManifestConfigOption{ResourceIdentifier: s.identifier(trait)}
		if t.UpdateStrategy != "" {
			cfg.UpdateStrategy = &workv1.UpdateStrategy{Type: workv1.UpdateStrategyType(t.UpdateStrategy)}
		}
		gk := trait.GroupVersionKind().GroupKind()
		same := s.indexes(func(obj *unstructured.Unstructured) bool {
			return isOf(obj, co.ComponentName, v1alpha2.ResourceTypeTrait) && obj.GroupVersionKind().GroupKind() == gk
		})
		if len(same) > 0 {
			i := same[0]
			replaced := s.identifier(s.objs[i])
			s.configs = slices.DeleteFunc(s.configs, func(c workv1.ManifestConfigOption) bool { return c.ResourceIdentifier == replaced })
			s.objs[i], s.changed[i] = trait, true
		} else {
			s.objs, s.changed = append(s.objs, trait), append(s.changed, true)
		}
		s.configs = append(s.configs, cfg)
	}
	return nil
}

// identifier is how a manifestConfig identifies obj.
func (s *spec) identifier(obj *unstructured.Unstructured) workv1.ResourceIdentifier {
	resource := ""
	if s.comps != nil {
		resource = s.comps.Resources[ResourceKey(obj)]
	}
	if resource == "" {
		plural, _ := meta.UnsafeGuessKindToResource(obj.GroupVersionKind())
		resource = plural.Resource
	}
	return workv1.ResourceIdentifier{Group: obj.GroupVersionKind().Group, Resource: resource, Name: obj.GetName(), Namespace: obj.GetNamespace()}
}

// indexes are the indexes of the objects that match.
func (s *spec) indexes(match func(*unstructured.Unstructured) bool) []int {
	var out []int
	for i, obj := range s.objs {
		if match(obj) {
			out = append(out, i)
		}
	}
	return out
}

// isOf reports whether obj is rendered of component as resourceType (a workload or a trait).
func isOf(obj *unstructured.Unstructured, component, resourceType string) bool {
	l := obj.GetLabels()
	return l[v1alpha2.LabelComponent] == component && l[v1alpha2.LabelResourceType] == resourceType
}

// setParameterValues writes values into workload at the field paths of the parameters they name.
func setParameterValues(workload *unstructured.Unstructured, params []v1alpha2.ComponentParameter, values []v1alpha2.ComponentParameterValue) error {
	for _, v := range values {
		i := slices.IndexFunc(params, func(p v1alpha2.ComponentParameter) bool { return p.Name == v.Name })
		if i < 0 {
			return fmt.Errorf("parameterValues: %q is not a parameter of the component (it has %s)", v.Name, ParameterNames(params))
		}
		var value any
		if err := json.Unmarshal(v.Value.Raw, &value); err != nil {
			return fmt.Errorf("parameter %q: %w", v.Name, err)
		}
		for _, path := range params[i].FieldPaths {
			if err := fieldpath.Set(workload.Object, path, value); err != nil {
				return fmt.Errorf("parameter %q: %w", v.Name, err)
			}
		}
	}
	return nil
}

// ParameterNames is how messages list a component's parameters: quoted, or "none".
func ParameterNames(params []v1alpha2.ComponentParameter) string {
	if len(params) == 0 {
		return "none"
	}
	out := make([]string, len(params))
	for i, p := range params {
		out[i] = strconv.Quote(p.Name)
	}
	return strings.Join(out, ", ")
}

// resolveComponents is co with c's facts in its parameter values and traits.
func resolveComponents(components []v1alpha2.ComponentOverride, c Cluster) ([]v1alpha2.ComponentOverride, error) {
	var out []v1alpha2.ComponentOverride
	for _, co := range components {
		rc := v1alpha2.ComponentOverride{ComponentName: co.ComponentName}
		for _, v := range co.ParameterValues {
			raw, err := substituteJSON(v.Value.Raw, c)
			if err != nil {
				return nil, fmt.Errorf("component %s, parameter %q: %w", co.ComponentName, v.Name, err)
			}
			v.Value.Raw, v.Value.Object = raw, nil
			rc.ParameterValues = append(rc.ParameterValues, v)
		}
		for n, t := range co.Traits {
			raw, err := substituteJSON(t.Trait.Raw, c)
			if err != nil {
				return nil, fmt.Errorf("component %s, traits[%d]: %w", co.ComponentName, n, err)
			}
			t.Trait.Raw, t.Trait.Object = raw, nil
			rc.Traits = append(rc.Traits, t)
		}
		out = append(out, rc)
	}
	return out, nil
}
