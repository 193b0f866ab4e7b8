package render

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	appsv1 "k8s.io/api/apps/v1"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/fieldpath"
	"github.com/ferry-mc/ferry/pkg/override"
)

// Resolved is the spec an AppConfig entry renders, and which revision of which component it is.
type Resolved struct {
	ComponentName string
	RevisionName  string
	Spec          *v1alpha2.ComponentSpec
}

// Input is what rendering an AppConfig needs from the hub. Every function of it only reads:
// rendering writes nothing, so that the same input renders the same result — what a rollout needs to
// render a revision again — and what rendering asks to be written (patch-trait objects to publish, a
// patched revision to record) is returned for the caller to write.
type Input struct {
	App *v1alpha2.ApplicationConfiguration
	// Component resolves an entry: by componentName to the component's latest revision, by revisionName
	// to that revision.
	Component func(entry v1alpha2.ApplicationConfigurationComponent) (Resolved, error)
	// TraitDefinition returns the definition of a trait object's kind.
	TraitDefinition func(trait *unstructured.Unstructured) (*v1alpha2.TraitDefinition, error)
	// PublishedPatches returns the patches a component's patch-trait objects publish on the hub, in
	// order, or a *PatchesPendingError while any of them is not on the hub as wanted or not Ready.
	PublishedPatches func(component string, traits []*unstructured.Unstructured) ([]Patch, error)
	// PatchedRevision finds the component's revision holding spec, a spec with patches merged; when
	// none does, it names the revision to record it as (the component's next) and says it is new.
	PatchedRevision func(component string, spec *v1alpha2.ComponentSpec) (name string, isNew bool, err error)
	// ClusterScoped reports whether objects of a kind live outside namespaces, as far as the hub knows
	// (its built-in kinds and the CRDs installed on it); nil knows none. Rendering gives the AppConfig's
	// namespace only to objects that may be namespaced: a ClusterRoleBinding is not stamped team-a, and
	// its status on the work matches it. Kinds the hub does not know keep the namespace, and the
	// agent's discovery decides.
	ClusterScoped func(gvk schema.GroupVersionKind) bool
}

// clusterScoped applies in.ClusterScoped to obj's kind.
func (in Input) clusterScoped(obj *unstructured.Unstructured) bool {
	return in.ClusterScoped != nil && in.ClusterScoped(obj.GroupVersionKind())
}

// Component is one component of an AppConfig as it is delivered.
type Component struct {
	ComponentName string
	RevisionName  string
	Workload      *unstructured.Unstructured
	// Traits are delivered beside the workload, each with the workload's reference where its
	// definition asks for it.
	Traits []*unstructured.Unstructured
	// Strategies the AppConfig sets for the workload and, by index, for each of Traits; empty ones
	// follow the hub's default.
	WorkloadStrategy v1alpha2.UpdateStrategy
	TraitStrategies  []v1alpha2.UpdateStrategy
	// PatchTraits (definition.patch) change the workload itself instead of being delivered:
	// these are their objects on the hub, named and labelled.
	PatchTraits []*unstructured.Unstructured
	// Parameters are those the component's revision declares: overrides of the component's parameter
	// values write the same fields.
	Parameters []v1alpha2.ComponentParameter
	// RevisionEnabled is set when a trait's definition is revisionEnabled: every revision gets a
	// workload of its own, and those of earlier revisions stay for the trait (a rollout) to retire.
	RevisionEnabled bool
	// NewRevision, when set, is the patched spec the workload was rendered from, which no revision of
	// the component holds yet: the caller records it as revision RevisionName before delivering.
	NewRevision *v1alpha2.ComponentSpec
}

// Error is an AppConfig that cannot be rendered as written; nothing of it should be delivered.
type Error struct {
	Component string
	Reason    string // a condition reason: ComponentNotFound, UnknownParameter, ...
	Message   string
}

func (e *Error) Error() string {
	if e.Component == "" {
		return e.Message // about the application as a whole
	}
	return fmt.Sprintf("component %q: %s", e.Component, e.Message)
}

// Render turns every component of the AppConfig into its workload and traits. It fails as a whole on
// the first component that cannot be rendered, so that nothing half-rendered is delivered.
func Render(in Input) ([]Component, error) {
	out := make([]Component, 0, len(in.App.Spec.Components))
	for _, entry := range in.App.Spec.Components {
		rc, err := renderComponent(in, entry)
		if err != nil {
			return nil, err
		}
		out = append(out, rc)
	}
	return out, nil
}

func renderComponent(in Input, entry v1alpha2.ApplicationConfigurationComponent) (Component, error) {
	name := cmp.Or(entry.ComponentName, entry.RevisionName)
	resolved, err := in.Component(entry)
	if err != nil {
		ref := "componentName " + entry.ComponentName
		if entry.RevisionName != "" {
			ref = "revisionName " + entry.RevisionName
		}
		return Component{}, &Error{Component: name, Reason: "ComponentNotFound", Message: fmt.Sprintf("%s: %v", ref, err)}
	}
	rc := Component{ComponentName: resolved.ComponentName, RevisionName: resolved.RevisionName, WorkloadStrategy: entry.UpdateStrategy}
	// Traits first decide the workload's name: a revision-enabled trait, or a pinned revision, makes
	// one workload per revision. Patch traits decide its spec.
	traits, err := sortTraits(in, entry, &rc)
	if err != nil {
		return rc, err
	}
	spec, err := patchedSpec(in, resolved.Spec, traits.patches, &rc)
	if err != nil {
		return rc, err
	}
	rc.Parameters = spec.Parameters
	workloadName := resolved.ComponentName
	if entry.RevisionName != "" || rc.RevisionEnabled {
		workloadName = rc.RevisionName
	}
	if rc.Workload, err = renderWorkload(in, spec, entry.ParameterValues, rc, workloadName); err != nil {
		return rc, err
	}
	kinds := map[string]int{}
	for i, trait := range traits.delivered {
		if trait.GetName() == "" {
			// Named after the component, not the workload: moving to a new revision updates the
			// trait's workloadRef instead of replacing the trait and losing its state (a rollout).
			trait.SetName(uniqueName(kinds, resolved.ComponentName, trait.GetKind()))
		}
		if trait.GetNamespace() == "" && !in.clusterScoped(trait) {
			trait.SetNamespace(cmp.Or(rc.Workload.GetNamespace(), in.App.Namespace))
		}
		if path := traits.defs[i].Spec.WorkloadRefPath; path != "" {
			ref := map[string]any{"apiVersion": rc.Workload.GetAPIVersion(), "kind": rc.Workload.GetKind(), "name": workloadName}
			if err := fieldpath.Set(trait.Object, path, ref); err != nil {
				return rc, &Error{Component: rc.ComponentName, Reason: "InvalidTrait",
					Message: fmt.Sprintf("trait %s: workloadRefPath of its definition %s: %v", trait.GetKind(), traits.defs[i].Name, err)}
			}
		}
		stamp(trait, in.App, rc, v1alpha2.ResourceTypeTrait)
		rc.Traits = append(rc.Traits, trait)
	}
	return rc, nil
}

// componentTraits are an entry's traits sorted by what they do: delivered beside the workload (with
// their definitions), or patching it inline.
type componentTraits struct {
	delivered []*unstructured.Unstructured
	defs      []*v1alpha2.TraitDefinition
	patches   []Patch
}

// sortTraits decodes an entry's traits and sorts them: inline patches, patch traits (rc.PatchTraits,
// named and labelled as the hub keeps them beside the AppConfig) and the traits delivered beside the
// workload, whose strategies and revision-enabled definitions it notes in rc.
func sortTraits(in Input, entry v1alpha2.ApplicationConfigurationComponent, rc *Component) (componentTraits, error) {
	var out componentTraits
	app, patchKinds := in.App, map[string]int{}
	for i, t := range entry.Traits {
		trait := &unstructured.Unstructured{}
		if err := json.Unmarshal(t.Trait.Raw, &trait.Object); err != nil || trait.Object == nil {
			return out, &Error{Component: rc.ComponentName, Reason: "InvalidTrait", Message: fmt.Sprintf("traits[%d] is not an object: %v", i, err)}
		}
		if isInlinePatch(trait) {
			p, err := inlinePatch(trait)
			if err != nil {
				return out, &Error{Component: rc.ComponentName, Reason: "InvalidPatch", Message: fmt.Sprintf("traits[%d]: %v", i, err)}
			}
			out.patches = append(out.patches, p)
			continue
		}
		def, err := in.TraitDefinition(trait)
		if err != nil {
			return out, &Error{Component: rc.ComponentName, Reason: "TraitDefinitionNotFound",
				Message: fmt.Sprintf("traits[%d] (%s %s): %v", i, trait.GetAPIVersion(), trait.GetKind(), err)}
		}
		if def.Spec.Patch {
			// The trait object lives on the hub, beside the AppConfig, where its controller publishes
			// the patch; named after the AppConfig too, as AppConfigs may share a component.
			if trait.GetName() == "" {
				trait.SetName(uniqueName(patchKinds, app.Name+"-"+rc.ComponentName, trait.GetKind()))
			}
			trait.SetNamespace(app.Namespace)
			labels := trait.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			labels[v1alpha2.LabelAppName], labels[v1alpha2.LabelComponent], labels[v1alpha2.LabelResourceType] = app.Name, rc.ComponentName, v1alpha2.ResourceTypeTrait
			labels[v1alpha2.LabelAppConfigNamespace], labels[v1alpha2.LabelAppConfigName] = app.Namespace, app.Name
			trait.SetLabels(labels)
			rc.PatchTraits = append(rc.PatchTraits, trait)
			continue
		}
		rc.RevisionEnabled = rc.RevisionEnabled || def.Spec.RevisionEnabled
		out.delivered, out.defs = append(out.delivered, trait), append(out.defs, def)
		rc.TraitStrategies = append(rc.TraitStrategies, t.UpdateStrategy)
	}
	return out, nil
}

// patchedSpec is spec with the published patches of rc's patch traits and the inline patches merged
// in. The patched spec is a revision of its own: a change of any patch makes a new one (rc.RevisionName,
// rc.NewRevision when no revision holds it yet), and a revision-enabled trait then rolls out to it like
// to any other revision.
func patchedSpec(in Input, spec *v1alpha2.ComponentSpec, inline []Patch, rc *Component) (*v1alpha2.ComponentSpec, error) {
	patches := inline
	if len(rc.PatchTraits) > 0 {
		if in.PublishedPatches == nil {
			return nil, &Error{Component: rc.ComponentName, Reason: "InvalidTrait", Message: "patch traits are not supported here"}
		}
		published, err := in.PublishedPatches(rc.ComponentName, rc.PatchTraits)
		var pending *PatchesPendingError
		if errors.As(err, &pending) {
			pending.Traits = rc.PatchTraits // for the caller to publish
		}
		if err != nil {
			return nil, err
		}
		patches = append(published, inline...)
	}
	if len(patches) == 0 {
		return spec, nil
	}
	spec, err := patchSpec(spec, patches)
	if err != nil {
		return nil, &Error{Component: rc.ComponentName, Reason: "InvalidPatch", Message: err.Error()}
	}
	if in.PatchedRevision == nil {
		return nil, &Error{Component: rc.ComponentName, Reason: "InvalidPatch", Message: "patched revisions are not supported here"}
	}
	var isNew bool
	if rc.RevisionName, isNew, err = in.PatchedRevision(rc.ComponentName, spec); err != nil {
		return nil, fmt.Errorf("find patched revision of component %s: %w", rc.ComponentName, err)
	}
	if isNew {
		rc.NewRevision = spec
	}
	return spec, nil
}

// renderWorkload is spec's workload with the parameter values set, named name, in the AppConfig's
// namespace unless it names its own or is of a kind the hub knows is cluster-scoped, stamped.
func renderWorkload(in Input, spec *v1alpha2.ComponentSpec, values []v1alpha2.ComponentParameterValue, rc Component, name string) (*unstructured.Unstructured, error) {
	workload := &unstructured.Unstructured{}
	if err := json.Unmarshal(spec.Workload.Raw, &workload.Object); err != nil || workload.Object == nil {
		return nil, &Error{Component: rc.ComponentName, Reason: "InvalidWorkload", Message: fmt.Sprintf("spec.workload of revision %s is not an object: %v", rc.RevisionName, err)}
	}
	if err := setParameters(workload, spec.Parameters, values); err != nil {
		return nil, &Error{Component: rc.ComponentName, Reason: err.reason, Message: err.message}
	}
	workload.SetName(name)
	if workload.GetNamespace() == "" && !in.clusterScoped(workload) {
		workload.SetNamespace(in.App.Namespace)
	}
	stamp(workload, in.App, rc, v1alpha2.ResourceTypeWorkload)
	return workload, nil
}

// uniqueName is <prefix>-<kind>, with -1, -2, ... for further traits of one kind; seen counts them.
func uniqueName(seen map[string]int, prefix, kind string) string {
	kind = strings.ToLower(kind)
	n := seen[kind]
	seen[kind] = n + 1
	if n > 0 {
		return prefix + "-" + kind + "-" + strconv.Itoa(n)
	}
	return prefix + "-" + kind
}

// patchSpec is spec with patches merged into its workload, in order.
func patchSpec(spec *v1alpha2.ComponentSpec, patches []Patch) (*v1alpha2.ComponentSpec, error) {
	workload := &unstructured.Unstructured{}
	if err := json.Unmarshal(spec.Workload.Raw, &workload.Object); err != nil || workload.Object == nil {
		return nil, fmt.Errorf("spec.workload is not an object: %v", err)
	}
	for _, p := range patches {
		if err := applyPatch(workload, p); err != nil {
			return nil, err
		}
	}
	raw, err := json.Marshal(workload.Object)
	if err != nil {
		return nil, err
	}
	out := spec.DeepCopy()
	out.Workload.Raw = raw
	out.Workload.Object = nil
	return out, nil
}

// stamp puts the labels and the annotation of rendered objects on obj.
func stamp(obj *unstructured.Unstructured, app *v1alpha2.ApplicationConfiguration, rc Component, resourceType string) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1alpha2.LabelAppName] = app.Name
	labels[v1alpha2.LabelComponent] = rc.ComponentName
	labels[v1alpha2.LabelRevision] = rc.RevisionName
	labels[v1alpha2.LabelResourceType] = resourceType
	obj.SetLabels(labels)
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[v1alpha2.AnnotationAppGen] = strconv.FormatInt(app.Generation, 10)
	obj.SetAnnotations(ann)
}

type parameterError struct{ reason, message string }

// setParameters writes the AppConfig's parameter values into the workload.
func setParameters(workload *unstructured.Unstructured, params []v1alpha2.ComponentParameter, values []v1alpha2.ComponentParameterValue) *parameterError {
	byName := map[string]v1alpha2.ComponentParameter{}
	for _, p := range params {
		byName[p.Name] = p
	}
	given := map[string]bool{}
	for _, v := range values {
		p, ok := byName[v.Name]
		if !ok {
			return &parameterError{"UnknownParameter", fmt.Sprintf("parameter %q is not a parameter of the component (it has %s)", v.Name, override.ParameterNames(params))}
		}
		given[v.Name] = true
		var value any
		if err := json.Unmarshal(v.Value.Raw, &value); err != nil {
			return &parameterError{"InvalidParameterValue", fmt.Sprintf("parameter %q: %v", v.Name, err)}
		}
		for _, path := range p.FieldPaths {
			if err := fieldpath.Set(workload.Object, path, value); err != nil {
				return &parameterError{"InvalidParameterValue", fmt.Sprintf("parameter %q: %v", v.Name, err)}
			}
		}
	}
	for _, p := range params {
		if p.Required && !given[p.Name] {
			return &parameterError{"MissingRequiredParameter", fmt.Sprintf("required parameter %q has no value", p.Name)}
		}
	}
	return nil
}

// ComponentRevisionFor names the revision of component that holds a spec whose encoding hashes to hash
// (SpecHash), among revs, the component's revisions: the one labelled with it, or else the one ferry-hub
// records it as, numbered after the others (isNew).
func ComponentRevisionFor(component, hash string, revs []appsv1.ControllerRevision) (name string, isNew bool) {
	var next int64 = 1
	for _, rev := range revs {
		if rev.Labels[v1alpha2.LabelComponentSpecHash] == hash {
			return rev.Name, false
		}
		next = max(next, rev.Revision+1)
	}
	return fmt.Sprintf("%s-v%d", component, next), true
}

// ResolvedOf is the component revision rev, as an entry of an AppConfig resolves to it.
func ResolvedOf(rev *appsv1.ControllerRevision) (Resolved, error) {
	spec := &v1alpha2.ComponentSpec{}
	if err := json.Unmarshal(rev.Data.Raw, spec); err != nil {
		return Resolved{}, fmt.Errorf("revision %s: %w", rev.Name, err)
	}
	return Resolved{ComponentName: rev.Labels[v1alpha2.LabelRevisionOfComponent], RevisionName: rev.Name, Spec: spec}, nil
}
