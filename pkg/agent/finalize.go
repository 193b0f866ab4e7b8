package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apply"
)

// finalize runs when a ManifestWork is being deleted: its objects are deleted (Foreground, the default),
// left in place (Orphan), or deleted but for the listed ones (SelectivelyOrphan); orphaned objects lose
// this work's owner reference. Only once every deleted object is gone are the AppliedManifestWork and
// the finalizers removed.
func (c *controller) finalize(ctx context.Context, work *workv1.ManifestWork) (nextStep, error) {
	if !slices.Contains(work.Finalizers, workv1.ManifestWorkFinalizer) {
		return nextStep{}, nil
	}
	amw, err := c.amwLister.Get(c.appliedWorkName(work.Name))
	if err != nil && !apierrors.IsNotFound(err) {
		return nextStep{}, err
	}
	if amw != nil {
		if work, err = c.markDeleting(ctx, work); err != nil {
			return nextStep{}, err
		}
		client, err := c.removalClient(work)
		if err != nil {
			return nextStep{}, err
		}
		done, err := c.removeAppliedWork(ctx, client, amw, workDeleted(work), func(a workv1.AppliedManifestResourceMeta) bool {
			return orphaned(work.Spec.DeleteOption, a.ResourceIdentifier)
		})
		if err != nil {
			return nextStep{}, err
		}
		if !done {
			return nextStep{after: time.Second}, nil
		}
	}
	rest := slices.DeleteFunc(slices.Clone(work.Finalizers), func(f string) bool { return f == workv1.ManifestWorkFinalizer })
	if _, err := c.works.Patch(ctx, work.Name, types.MergePatchType, finalizersPatch(work.ObjectMeta, rest), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return nextStep{}, fmt.Errorf("remove finalizer: %w", err)
	}
	if c.watches != nil {
		c.watches.forget(work.Name)
	}
	return nextStep{}, nil
}

// markDeleting sets the work's Deleting condition, as OCM's agent does while it removes what a work
// applied, so that the hub sees why the work has not gone yet.
func (c *controller) markDeleting(ctx context.Context, work *workv1.ManifestWork) (*workv1.ManifestWork, error) {
	if meta.IsStatusConditionTrue(work.Status.Conditions, workv1.WorkDeleting) {
		return work, nil
	}
	status := *work.Status.DeepCopy()
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: workv1.WorkDeleting, Status: metav1.ConditionTrue,
		Reason: "WorkDeleting", Message: "ManifestWork is being deleted", ObservedGeneration: work.Generation})
	updated, err := c.patchStatus(ctx, work, status)
	if err != nil {
		return nil, fmt.Errorf("set the Deleting condition: %w", err)
	}
	return updated, nil
}

// removeAppliedWork deletes the objects an AppliedManifestWork records (but those orphan keeps, which
// only lose its owner reference), and once they are gone the AppliedManifestWork itself. done reports
// that nothing is left to wait for. It runs only where no worker applies with amw meanwhile: for a work
// being deleted (which cannot come back before its finalizer goes), or for an AppliedManifestWork
// eviction has claimed by deleting it (see eviction.go). why is what the objects' Events say.
func (c *controller) removeAppliedWork(ctx context.Context, client dynamic.Interface, amw *workv1.AppliedManifestWork, why removal, orphan func(workv1.AppliedManifestResourceMeta) bool) (done bool, err error) {
	allGone := true
	var left []*unstructured.Unstructured
	for _, a := range amw.Status.AppliedResources {
		gone, kept, err := c.removeResource(ctx, client, amw, a, orphan(a), why)
		if err != nil {
			return false, fmt.Errorf("remove %s: %w", appliedKey(a), err)
		}
		allGone = allGone && gone
		if kept != nil {
			left = append(left, kept)
		}
	}
	if !allGone {
		return false, nil
	}
	// Only now, once: every pass until then finds the orphaned objects again.
	for _, obj := range left {
		c.events.orphaned(obj, why)
	}
	if slices.Contains(amw.Finalizers, workv1.AppliedManifestWorkFinalizer) {
		rest := slices.DeleteFunc(slices.Clone(amw.Finalizers), func(f string) bool { return f == workv1.AppliedManifestWorkFinalizer })
		_, err := c.amws.Patch(ctx, amw.Name, types.MergePatchType, finalizersPatch(amw.ObjectMeta, rest), metav1.PatchOptions{})
		switch {
		case apierrors.IsConflict(err):
			// Changed since it was read (a cache behind, a status write): removed at the next look.
			return false, nil
		case err != nil && !apierrors.IsNotFound(err):
			return false, fmt.Errorf("remove AppliedManifestWork finalizer: %w", err)
		}
	}
	// The UID precondition: a fresh AppliedManifestWork of the same name is not this one.
	uid := amw.UID
	err = c.amws.Delete(ctx, amw.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return false, fmt.Errorf("delete AppliedManifestWork: %w", err)
	}
	return true, nil
}

// orphaned reports whether the delete option keeps the object on the spoke: Orphan keeps every object,
// SelectivelyOrphan those its orphaning rules name exactly (as OCM's agent reads them, no wildcards).
// An orphaned object is applied without the work's owner reference and is left in place both when the
// work is deleted and when its manifest leaves the work.
func orphaned(opt *workv1.DeleteOption, id workv1.ResourceIdentifier) bool {
	if opt == nil {
		return false
	}
	switch opt.PropagationPolicy {
	case workv1.DeletePropagationPolicyTypeOrphan:
		return true
	case workv1.DeletePropagationPolicyTypeSelectivelyOrphan:
		return opt.SelectivelyOrphan != nil && slices.ContainsFunc(opt.SelectivelyOrphan.OrphaningRules,
			func(rule workv1.OrphaningRule) bool { return workv1.ResourceIdentifier(rule) == id })
	}
	return false
}

// removalClient is what removes a work's objects: the agent's own client, or in ExecutorImpersonate
// mode one acting as the work's executor, so that it can delete no more than it could apply.
func (c *controller) removalClient(work *workv1.ManifestWork) (dynamic.Interface, error) {
	client, err := c.executors.dynamicFor(work)
	if client == nil || err != nil {
		return c.dynamic, err
	}
	return client, nil
}

// removeResource deletes an object the work applied — only if it is still the object the work applied
// (same UID), carries this work's owner reference, and no other work owns it too; otherwise, and when
// orphan is set, it only drops this work's owner reference. gone reports that nothing is left to wait
// for; left is the object when orphan leaves it on the cluster (for the caller to record its Event once).
// A deletion records its Event, saying why.
func (c *controller) removeResource(ctx context.Context, client dynamic.Interface, amw *workv1.AppliedManifestWork, a workv1.AppliedManifestResourceMeta, orphan bool, why removal) (gone bool, left *unstructured.Unstructured, err error) {
	gvr := schema.GroupVersionResource{Group: a.Group, Version: a.Version, Resource: a.Resource}
	var ri dynamic.ResourceInterface = client.Resource(gvr)
	if a.Namespace != "" {
		ri = client.Resource(gvr).Namespace(a.Namespace)
	}
	obj, err := ri.Get(ctx, a.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	if a.UID != "" && string(obj.GetUID()) != a.UID {
		return true, nil, nil // deleted and re-created by someone else since: not ours
	}
	ours, shared := -1, false
	for i, ref := range obj.GetOwnerReferences() {
		switch {
		case ref.UID == amw.UID:
			ours = i
		case ref.Kind == "AppliedManifestWork" && ref.APIVersion == workv1.GroupVersion.String():
			shared = true
		}
	}
	if orphan {
		left = obj
	}
	if ours < 0 {
		// Not owned by this work: an object that existed before a CreateOnly manifest named it, one
		// whose owner reference someone removed, or one the work orphaned from the start. It is not
		// ours to delete.
		return true, left, nil
	}
	if orphan || shared {
		if _, err := ri.Patch(ctx, a.Name, types.JSONPatchType, dropOwnerPatch(ours, amw.UID), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return false, nil, fmt.Errorf("drop owner reference: %w", err)
		}
		return true, left, nil
	}
	if obj.GetDeletionTimestamp() != nil {
		return false, nil, nil // going; wait for it
	}
	uid := obj.GetUID()
	foreground := metav1.DeletePropagationForeground
	err = ri.Delete(ctx, a.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &foreground})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil, nil
	case apierrors.IsConflict(err):
		return true, nil, nil // the UID precondition failed: it is another object now
	case err != nil:
		return false, nil, fmt.Errorf("delete: %w", err)
	}
	c.events.deleted(obj, why)
	return false, nil, nil
}

// dropOwnerPatch is a JSON patch removing the owner reference at index i, provided it is still owner's.
func dropOwnerPatch(i int, owner types.UID) []byte {
	patch, _ := json.Marshal([]map[string]any{
		{"op": "test", "path": fmt.Sprintf("/metadata/ownerReferences/%d/uid", i), "value": string(owner)},
		{"op": "remove", "path": fmt.Sprintf("/metadata/ownerReferences/%d", i)},
	})
	return patch
}

// disown removes the owner reference of the AppliedManifestWork owner from an object work applied
// while it owned it and orphans now (its deleteOption changed), so that removing the manifest or
// deleting the work leaves the object in place.
func (c *controller) disown(ctx context.Context, work *workv1.ManifestWork, res apply.Result, owner types.UID) error {
	i := slices.IndexFunc(res.Object.GetOwnerReferences(), func(ref metav1.OwnerReference) bool { return ref.UID == owner })
	if i < 0 {
		return nil
	}
	var ri dynamic.ResourceInterface = c.dynamic.Resource(res.Resource)
	if res.Namespaced {
		ri = c.dynamic.Resource(res.Resource).Namespace(res.Object.GetNamespace())
	}
	if _, err := ri.Patch(ctx, res.Object.GetName(), types.JSONPatchType, dropOwnerPatch(i, owner), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("drop the owner reference of the orphaned object: %w", err)
	}
	c.events.disowned(res.Object, work)
	return nil
}
