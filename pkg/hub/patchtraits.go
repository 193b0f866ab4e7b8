package hub

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/render"
)

// A patch trait's controller publishes its patch in a ConfigMap and says so in the trait's status.
const (
	// PatchPhaseReady is the status.phase of a patch trait whose patch is published.
	PatchPhaseReady = "Ready"
	// PatchConfigKey is the key of the patch in the ConfigMap a patch trait's status.patchConfig names.
	PatchConfigKey = "patch"
)

// publishedPatches reads, without writing, the patches of a component's patch-trait objects on the
// hub: one not there as wanted — not created yet, or its spec or labels not yet what the
// AppConfig says — or not Ready makes the component wait; publishPatchTraits then writes it.
func (r *AppConfigReconciler) publishedPatches(ctx context.Context, app *v1alpha2.ApplicationConfiguration) func(string, []*unstructured.Unstructured) ([]render.Patch, error) {
	return func(component string, traits []*unstructured.Unstructured) ([]render.Patch, error) {
		var patches []render.Patch
		var waiting []string
		for _, want := range traits {
			id := fmt.Sprintf("%s %s/%s", want.GetKind(), want.GetNamespace(), want.GetName())
			have, err := r.readPatchTrait(ctx, app, component, want)
			if err != nil {
				return nil, err
			}
			switch {
			case have == nil:
				waiting = append(waiting, id+": not on the hub yet")
				continue
			case patchTraitChanged(have, want):
				waiting = append(waiting, id+": its spec is being updated on the hub")
				continue
			}
			configMap, why := patchConfig(have)
			if why != "" {
				waiting = append(waiting, id+": "+why)
				continue
			}
			cm := &corev1.ConfigMap{}
			if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: have.GetNamespace(), Name: configMap}, cm); err != nil {
				if apierrors.IsNotFound(err) {
					waiting = append(waiting, fmt.Sprintf("%s: its status.patchConfig names ConfigMap %s, which does not exist", id, configMap))
					continue
				}
				return nil, fmt.Errorf("read patch of %s: %w", id, err)
			}
			data, ok := cm.Data[PatchConfigKey]
			if !ok {
				return nil, &render.Error{Component: component, Reason: "InvalidPatch",
					Message: fmt.Sprintf("%s: ConfigMap %s named by its status.patchConfig has no data.%s", id, configMap, PatchConfigKey)}
			}
			patches = append(patches, render.Patch{Source: id, Data: []byte(data)})
		}
		if len(waiting) > 0 {
			return nil, &render.PatchesPendingError{Component: component, Waiting: waiting}
		}
		return patches, nil
	}
}

// readPatchTrait returns the hub's object of a patch trait (nil when there is none yet), refusing one
// the hub does not serve or another owner holds, and watches its kind.
func (r *AppConfigReconciler) readPatchTrait(ctx context.Context, app *v1alpha2.ApplicationConfiguration, component string, want *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	gvk := want.GroupVersionKind()
	id := fmt.Sprintf("%s %s/%s", want.GetKind(), want.GetNamespace(), want.GetName())
	have := &unstructured.Unstructured{}
	have.SetGroupVersionKind(gvk)
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), have)
	switch {
	case meta.IsNoMatchError(err):
		return nil, &render.Error{Component: component, Reason: "PatchTraitNotServed",
			Message: fmt.Sprintf("patch trait %s: the hub serves no %s: install its CustomResourceDefinition on the hub", id, gvk)}
	case apierrors.IsNotFound(err):
		return nil, r.watchKind(gvk)
	case err != nil:
		return nil, fmt.Errorf("read patch trait %s: %w", id, err)
	}
	if err := r.watchKind(gvk); err != nil {
		return nil, err
	}
	if !metav1.IsControlledBy(have, app) {
		return nil, &render.Error{Component: component, Reason: "PatchTraitConflict",
			Message: fmt.Sprintf("patch trait %s exists and does not belong to this AppConfig: name the trait differently", id)}
	}
	return have, nil
}

// patchTraitChanged reports that the hub's object of a patch trait is not yet as want: its spec
// differs, or a label of want is missing or different.
func patchTraitChanged(have, want *unstructured.Unstructured) bool {
	if !equality.Semantic.DeepEqual(have.Object["spec"], want.Object["spec"]) {
		return true
	}
	labels := have.GetLabels()
	for k, v := range want.GetLabels() {
		if labels[k] != v {
			return true
		}
	}
	return false
}

// publishPatchTraits creates or updates the patch-trait objects a rendering waits for, owned by the
// AppConfig; their controllers then publish the patches, and their watches bring the AppConfig back.
func (r *AppConfigReconciler) publishPatchTraits(ctx context.Context, app *v1alpha2.ApplicationConfiguration, component string, traits []*unstructured.Unstructured) error {
	for _, want := range traits {
		if err := r.publish(ctx, app, component, want); err != nil {
			return err
		}
	}
	return nil
}

// patchConfig is the ConfigMap holding a patch trait's patch, or why the trait is not Ready. A status
// about an older generation of the trait (status.observedGeneration, where the controller sets it)
// describes an older patch: the trait is not Ready until its controller catches up.
func patchConfig(trait *unstructured.Unstructured) (configMap, notReady string) {
	phase, _, _ := unstructured.NestedString(trait.Object, "status", "phase")
	if phase != PatchPhaseReady {
		if phase == "" {
			return "", "its controller has not set status.phase yet"
		}
		return "", fmt.Sprintf("status.phase is %s, not %s", phase, PatchPhaseReady)
	}
	if observed, found, _ := unstructured.NestedInt64(trait.Object, "status", "observedGeneration"); found && observed < trait.GetGeneration() {
		return "", fmt.Sprintf("its status is of generation %d, the trait is at %d", observed, trait.GetGeneration())
	}
	name, _, _ := unstructured.NestedString(trait.Object, "status", "patchConfig")
	if name == "" {
		return "", "status.patchConfig names no ConfigMap"
	}
	return name, ""
}

// publish makes the hub's object of a patch trait match want, owned by the AppConfig.
func (r *AppConfigReconciler) publish(ctx context.Context, app *v1alpha2.ApplicationConfiguration, component string, want *unstructured.Unstructured) error {
	id := fmt.Sprintf("%s %s/%s", want.GetKind(), want.GetNamespace(), want.GetName())
	have, err := r.readPatchTrait(ctx, app, component, want)
	if err != nil {
		return err
	}
	if have == nil {
		want = want.DeepCopy()
		if err := controllerutil.SetControllerReference(app, want, r.Client.Scheme()); err != nil {
			return err
		}
		if err := r.Client.Create(ctx, want); err != nil {
			return fmt.Errorf("create patch trait %s: %w", id, err)
		}
		r.Recorder.Eventf(app, want, corev1.EventTypeNormal, "PatchTraitCreated", "Create", "created patch trait %s; the workload waits for its patch", id)
		return nil
	}
	if !patchTraitChanged(have, want) {
		return nil
	}
	if spec, ok := want.Object["spec"]; ok {
		have.Object["spec"] = spec
	} else {
		delete(have.Object, "spec")
	}
	labels := have.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range want.GetLabels() {
		labels[k] = v
	}
	have.SetLabels(labels)
	if err := r.Client.Update(ctx, have); err != nil {
		return fmt.Errorf("update patch trait %s: %w", id, err)
	}
	return nil
}

// watchKind watches the hub's objects of a patch-trait kind, once, so that a trait's status brings its
// AppConfig back at once.
func (r *AppConfigReconciler) watchKind(gvk schema.GroupVersionKind) error {
	if r.controller == nil {
		return nil
	}
	if _, seen := r.watched.LoadOrStore(gvk, true); seen {
		return nil
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := r.controller.Watch(source.Kind[client.Object](r.cache, obj, r.byLabels)); err != nil {
		r.watched.Delete(gvk)
		return fmt.Errorf("watch patch traits of kind %s: %w", gvk, err)
	}
	return nil
}

// deleteStalePatchTraits deletes the patch-trait objects the AppConfig had (by its status) and no longer
// has.
func (r *AppConfigReconciler) deleteStalePatchTraits(ctx context.Context, app *v1alpha2.ApplicationConfiguration, rendered []render.Component) error {
	keep := map[v1alpha2.TypedReference]bool{}
	for _, rc := range rendered {
		for _, t := range rc.PatchTraits {
			keep[ref(t)] = true
		}
	}
	return r.deletePatchTraits(ctx, app, keep)
}

// deletePatchTraits deletes the AppConfig's patch-trait objects (by its status) but those in keep.
func (r *AppConfigReconciler) deletePatchTraits(ctx context.Context, app *v1alpha2.ApplicationConfiguration, keep map[v1alpha2.TypedReference]bool) error {
	for _, w := range app.Status.Workloads {
		for _, t := range w.PatchTraits {
			if keep[t.Reference] {
				continue
			}
			obj := &unstructured.Unstructured{}
			obj.SetAPIVersion(t.Reference.APIVersion)
			obj.SetKind(t.Reference.Kind)
			obj.SetNamespace(app.Namespace)
			obj.SetName(t.Reference.Name)
			err := r.Client.Delete(ctx, obj)
			if err == nil {
				r.Recorder.Eventf(app, obj, corev1.EventTypeNormal, "PatchTraitDeleted", "Delete", "deleted patch trait %s %s", t.Reference.Kind, t.Reference.Name)
			}
			if client.IgnoreNotFound(err) != nil && !meta.IsNoMatchError(err) {
				return fmt.Errorf("delete patch trait %s %s: %w", t.Reference.Kind, t.Reference.Name, err)
			}
		}
	}
	return nil
}

// patchedRevision finds, without writing, the component's revision holding spec, a spec with patches
// merged, or names the component's next revision for it (a change of any patch is a new
// revision), which recordPatchedRevisions then writes.
func (r *AppConfigReconciler) patchedRevision(ctx context.Context, app *v1alpha2.ApplicationConfiguration) func(string, *v1alpha2.ComponentSpec) (string, bool, error) {
	namespace := app.Namespace
	return func(component string, spec *v1alpha2.ComponentSpec) (string, bool, error) {
		raw, err := json.Marshal(spec)
		if err != nil {
			return "", false, err
		}
		hash := render.SpecHash(raw)
		list := &appsv1.ControllerRevisionList{}
		if err := r.Client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{ComponentLabel: component}); err != nil {
			return "", false, fmt.Errorf("list revisions of component %s: %w", component, err)
		}
		name, isNew := render.ComponentRevisionFor(component, hash, sortRevisions(list.Items))
		return name, isNew, nil
	}
}

// recordPatchedRevisions records every patched spec rendering named a new revision for, under that
// name, before anything rendered from it is delivered.
func (r *AppConfigReconciler) recordPatchedRevisions(ctx context.Context, app *v1alpha2.ApplicationConfiguration, rendered []render.Component) error {
	for _, rc := range rendered {
		if rc.NewRevision == nil {
			continue
		}
		raw, err := json.Marshal(rc.NewRevision)
		if err != nil {
			return err
		}
		comp := &v1alpha2.Component{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: app.Namespace, Name: rc.ComponentName}, comp); err != nil {
			return fmt.Errorf("component %s: %w", rc.ComponentName, err)
		}
		n := render.RevisionNumber(rc.RevisionName)
		if n == 0 || RevisionName(rc.ComponentName, n) != rc.RevisionName {
			return fmt.Errorf("patched revision %q of component %s is not named <component>-v<n>", rc.RevisionName, rc.ComponentName)
		}
		rev, err := revisionOf(comp, n, raw, r.Client.Scheme())
		if err != nil {
			return err
		}
		rev.Labels[PatchedLabel] = "true"
		if err := r.Client.Create(ctx, rev); err != nil {
			// Already there: made by an earlier round the cache has not seen, or taken by another
			// revision meanwhile; the next round renders again and sees which.
			return fmt.Errorf("create revision %s: %w", rev.Name, err)
		}
		r.Recorder.Eventf(comp, rev, corev1.EventTypeNormal, "PatchedRevisionCreated", "Create",
			"recorded revision %s: the component's spec with the patches of AppConfig %s merged", rev.Name, app.Name)
	}
	return nil
}
