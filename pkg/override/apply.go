package override

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// Error is an override that cannot be applied for a cluster: which entry, for which cluster, on which
// rendered object (when one), and why.
type Error struct {
	Override string
	Cluster  string
	// Object is the rendered object, as "Kind name", when the entry failed on one.
	Object string
	Err    error
}

func (e *Error) Error() string {
	var where strings.Builder
	fmt.Fprintf(&where, "override %s", e.Override)
	if e.Cluster != "" {
		fmt.Fprintf(&where, " for cluster %s", e.Cluster)
	}
	if e.Object != "" {
		fmt.Fprintf(&where, " on %s", e.Object)
	}
	return fmt.Sprintf("%s: %v", where.String(), e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ForCluster is the spec of the work c gets of a revision: the revision's spec with the overrides that
// select c applied (Resolve, then Apply), and the names of those overrides in order. comps is what the
// revision recorded for overrides of its components, nil when it has none.
func ForCluster(spec workv1.ManifestWorkSpec, overrides []v1alpha2.Override, comps *Components, c Cluster) (workv1.ManifestWorkSpec, []string, error) {
	resolved, err := Resolve(overrides, c)
	if err != nil {
		return workv1.ManifestWorkSpec{}, nil, err
	}
	out, err := Apply(spec, resolved, comps)
	if err != nil {
		var oe *Error
		if errors.As(err, &oe) {
			oe.Cluster = c.Name
		}
		return workv1.ManifestWorkSpec{}, nil, err
	}
	names := make([]string, len(resolved))
	for i, o := range resolved {
		names[i] = o.Name
	}
	return out, names, nil
}

// Apply is a work's spec changed by resolved overrides (Resolve's, no fact left to put in), in order;
// comps is what the revision recorded for overrides of its components. Manifests no override changes
// keep their bytes; a changed one is encoded again, its keys sorted; a trait an override adds comes
// after the others, and its manifestConfig after theirs. An override that targets no object, a
// parameter the component does not declare, a JSON patch path that does not exist, or a change of an
// object's apiVersion, kind, name or namespace by a patch is an Error.
func Apply(in workv1.ManifestWorkSpec, resolved []v1alpha2.Override, comps *Components) (workv1.ManifestWorkSpec, error) {
	if len(resolved) == 0 {
		return in, nil
	}
	manifests := in.Workload.Manifests
	s := &spec{objs: make([]*unstructured.Unstructured, len(manifests)), changed: make([]bool, len(manifests)),
		configs: slices.Clone(in.ManifestConfigs), comps: comps}
	for i, m := range manifests {
		s.objs[i] = &unstructured.Unstructured{}
		if err := s.objs[i].UnmarshalJSON(m.Raw); err != nil {
			return workv1.ManifestWorkSpec{}, fmt.Errorf("decode manifest %d: %w", i, err)
		}
	}
	for i := range resolved {
		if err := applyOne(&resolved[i], s); err != nil {
			return workv1.ManifestWorkSpec{}, err
		}
	}
	out := in
	out.Workload.Manifests = make([]workv1.Manifest, len(s.objs))
	for i, obj := range s.objs {
		if !s.changed[i] {
			out.Workload.Manifests[i] = manifests[i]
			continue
		}
		raw, err := json.Marshal(obj.Object)
		if err != nil {
			return workv1.ManifestWorkSpec{}, fmt.Errorf("encode %s: %w", objectName(obj), err)
		}
		out.Workload.Manifests[i] = workv1.Manifest{}
		out.Workload.Manifests[i].Raw = raw
	}
	out.ManifestConfigs = s.configs
	return out, nil
}

// applyOne applies one override to s.
func applyOne(o *v1alpha2.Override, s *spec) error {
	fail := func(obj *unstructured.Unstructured, err error) error {
		e := &Error{Override: o.Name, Err: err}
		if obj != nil {
			e.Object = objectName(obj)
		}
		return e
	}
	if s.comps != nil && s.comps.Invalid[o.Name] != "" {
		return fail(nil, errors.New(s.comps.Invalid[o.Name]))
	}
	for _, co := range o.Components {
		if err := s.applyComponent(co); err != nil {
			var oe *Error
			if errors.As(err, &oe) {
				oe.Override = o.Name
				return oe
			}
			return fail(nil, err)
		}
	}
	objs, changed := s.objs, s.changed
	if o.Image != nil {
		matched := false
		for i, obj := range objs {
			if obj.GetLabels()[v1alpha2.LabelResourceType] != v1alpha2.ResourceTypeWorkload ||
				(o.Image.Component != "" && obj.GetLabels()[v1alpha2.LabelComponent] != o.Image.Component) {
				continue
			}
			matched = true
			n, err := setImages(obj.Object, o.Image)
			if err != nil {
				return fail(obj, err)
			}
			if n == 0 {
				return fail(obj, errors.New("image: the workload has no containers (spec.containers, spec.template.spec.containers or spec.jobTemplate.spec.template.spec.containers)"))
			}
			changed[i] = true
		}
		if !matched {
			what := "any component"
			if o.Image.Component != "" {
				what = "component " + o.Image.Component
			}
			return fail(nil, fmt.Errorf("image: no workload of %s is rendered", what))
		}
	}
	for _, kv := range []struct {
		field  string
		values map[string]string
		get    func(*unstructured.Unstructured) map[string]string
		set    func(*unstructured.Unstructured, map[string]string)
	}{
		{"labels", o.Labels, (*unstructured.Unstructured).GetLabels, (*unstructured.Unstructured).SetLabels},
		{"annotations", o.Annotations, (*unstructured.Unstructured).GetAnnotations, (*unstructured.Unstructured).SetAnnotations},
	} {
		if len(kv.values) == 0 {
			continue
		}
		for k := range kv.values {
			if reservedKey(k) {
				return fail(nil, fmt.Errorf("%s: %s is Ferry's own key (app.oam.dev/ and ferry.io/ keys say which application an object is of)", kv.field, k))
			}
		}
		for i, obj := range objs {
			m := kv.get(obj)
			if m == nil {
				m = map[string]string{}
			}
			for k, v := range kv.values {
				m[k] = v
			}
			kv.set(obj, m)
			changed[i] = true
		}
	}
	for _, p := range o.Patches {
		if p.MergePatch == nil && len(p.JSONPatch) == 0 {
			return fail(nil, fmt.Errorf("patch of %s: set mergePatch, jsonPatch or both", targetString(p.Target)))
		}
		matched := false
		for i, obj := range objs {
			if !targets(p.Target, obj) {
				continue
			}
			matched = true
			patched, err := patchObject(obj, p)
			if err != nil {
				return fail(obj, err)
			}
			objs[i], changed[i] = patched, true
		}
		if !matched {
			return fail(nil, fmt.Errorf("patch of %s: no such object is rendered", targetString(p.Target)))
		}
	}
	return nil
}

// reservedKey reports whether a label or annotation key is one Ferry renders itself.
func reservedKey(k string) bool {
	return strings.HasPrefix(k, "app.oam.dev/") || strings.HasPrefix(k, "ferry.io/")
}

// targets reports whether t selects obj.
func targets(t v1alpha2.ObjectTarget, obj *unstructured.Unstructured) bool {
	return obj.GetKind() == t.Kind && (t.APIVersion == "" || obj.GetAPIVersion() == t.APIVersion) && (t.Name == "" || obj.GetName() == t.Name)
}

// patchObject is obj with p's merge patch, then its JSON patch, applied. It keeps obj's identity.
func patchObject(obj *unstructured.Unstructured, p v1alpha2.ObjectPatch) (*unstructured.Unstructured, error) {
	doc, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, err
	}
	if p.MergePatch != nil {
		if doc, err = jsonpatch.MergePatch(doc, p.MergePatch.Raw); err != nil {
			return nil, fmt.Errorf("mergePatch: %w", err)
		}
	}
	if len(p.JSONPatch) > 0 {
		ops, err := json.Marshal(p.JSONPatch)
		if err != nil {
			return nil, err
		}
		patch, err := jsonpatch.DecodePatch(ops)
		if err != nil {
			return nil, fmt.Errorf("jsonPatch: %w", err)
		}
		if doc, err = patch.Apply(doc); err != nil {
			return nil, fmt.Errorf("jsonPatch: %w", err)
		}
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(doc); err != nil {
		return nil, fmt.Errorf("the patched object: %w", err)
	}
	if out.GetAPIVersion() != obj.GetAPIVersion() || out.GetKind() != obj.GetKind() || out.GetName() != obj.GetName() || out.GetNamespace() != obj.GetNamespace() {
		return nil, fmt.Errorf("a patch may not change an object's apiVersion, kind, name or namespace (it made it %s %s %s/%s)",
			out.GetAPIVersion(), out.GetKind(), out.GetNamespace(), out.GetName())
	}
	return out, nil
}

// objectName is how an error names a rendered object.
func objectName(obj *unstructured.Unstructured) string {
	return obj.GetKind() + " " + obj.GetName()
}

// targetString is how an error names a patch's target.
func targetString(t v1alpha2.ObjectTarget) string {
	s := t.Kind
	if t.APIVersion != "" {
		s = t.APIVersion + " " + s
	}
	if t.Name != "" {
		s += " " + t.Name
	}
	return s
}
