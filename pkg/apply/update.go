package apply

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/jsonmergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"
)

// updateStrategy is a 3-way merge against the last-applied record, as `kubectl apply` does it: the patch takes the object
// from its current state to the desired manifest in the fields the manifest sets, and removes the
// fields the last applied manifest set and the desired one no longer does. Fields set by anyone else —
// defaults, an HPA's replicas, a Service's clusterIP — are in neither and stay as they are. No write is
// made when the patch is empty.
type updateStrategy struct{}

func (updateStrategy) apply(ctx context.Context, r *request) (Result, error) {
	rec, err := newRecord(r.desired, r.storeKey(), r.store)
	if err != nil {
		return Result{}, err
	}
	if r.current == nil {
		return create(ctx, r, rec)
	}
	original, err := lastApplied(ctx, r.store, r.current)
	if err != nil {
		return Result{}, err
	}
	res := r.result
	if bytes.Equal(original, rec.data) && inSync(r, rec) {
		// The common resync: nothing to compute a patch for.
		res.Object, res.Operation = r.current, Unchanged
		return res, nil
	}
	if adoptedInSync(r) {
		res.Object, res.Operation = r.current, Unchanged
		return res, nil
	}
	modified, err := json.Marshal(rec.annotate(r.desired).Object)
	if err != nil {
		return Result{}, err
	}
	current, err := json.Marshal(r.current.Object)
	if err != nil {
		return Result{}, err
	}
	patch, patchType, err := threeWayPatch(original, modified, current, r.desired)
	if err != nil {
		return Result{}, err
	}
	patch, err = finishPatch(patch, r, rec)
	if err != nil {
		return Result{}, err
	}
	if patch == nil {
		res.Object, res.Operation = r.current, Unchanged
		return res, nil
	}
	if bytes.Equal(original, rec.data) {
		// The manifest is the one last applied, yet the object needs a patch: changed on the cluster.
		res.Drift = computeDrift(r.current, withOwnerOf(rec.annotate(r.desired), r.opts.Owner), r.opts.FieldManager)
	}
	if !rec.inline() {
		if err := r.store.Put(ctx, r.storeKey(), rec.data); err != nil {
			return Result{}, fmt.Errorf("store last-applied record: %w", err)
		}
	}
	obj, err := r.client.Patch(ctx, r.desired.GetName(), patchType, patch, metav1.PatchOptions{FieldManager: r.opts.FieldManager})
	if err != nil {
		return Result{}, err
	}
	if _, wasStored := r.current.GetAnnotations()[LastAppliedRefAnnotation]; wasStored && rec.inline() && r.store != nil {
		// The record fits in the annotation again; the stored one is of no further use.
		if err := r.store.Delete(ctx, r.storeKey()); err != nil {
			return Result{}, fmt.Errorf("delete stored last-applied record: %w", err)
		}
	}
	res.Object, res.Operation = obj, Updated
	return res, nil
}

// inSync reports, cheaply and conservatively, that the live object needs no patch: it was last applied
// with this very manifest and still holds every value of it, its record annotation and the owner. A
// false answer only means the 3-way merge decides.
func inSync(r *request, rec *record) bool {
	if _, stale := r.current.GetAnnotations()[rec.remove]; stale {
		return false
	}
	return holds(r.current, withOwnerOf(rec.annotate(r.desired), r.opts.Owner))
}

// adoptedInSync reports that the live object carries no last-applied record of Ferry's at all and
// already holds every value of the manifest and the owner: an object another agent applied — OCM's
// work agent, before a klusterlet runs Ferry's image in its place — or someone made by hand, adopted as
// it is. Writing it only to add the record would touch every object of a cluster that changes agents,
// so the record is written with the first change of the manifest instead. Until then there is no
// "original": a field that first change drops from the manifest stays on the object, as `kubectl
// apply` leaves the fields of an object it did not create.
func adoptedInSync(r *request) bool {
	ann := r.current.GetAnnotations()
	if _, ok := ann[LastAppliedAnnotation]; ok {
		return false
	}
	if _, ok := ann[LastAppliedRefAnnotation]; ok {
		return false
	}
	return holds(r.current, withOwnerOf(r.desired, r.opts.Owner))
}

// withOwnerOf returns u, or a copy of it with owner among its owner references when there is one.
func withOwnerOf(u *unstructured.Unstructured, owner *metav1.OwnerReference) *unstructured.Unstructured {
	if owner == nil {
		return u
	}
	out := u.DeepCopy()
	out.SetOwnerReferences(withOwner(out.GetOwnerReferences(), owner))
	return out
}

// threeWayPatch computes the patch: strategic merge for kinds the client scheme knows (lists of
// containers, ports and the like merge by key), JSON merge for the rest.
func threeWayPatch(original, modified, current []byte, desired *unstructured.Unstructured) ([]byte, types.PatchType, error) {
	if typed, err := scheme.Scheme.New(desired.GroupVersionKind()); err == nil {
		meta, err := strategicpatch.NewPatchMetaFromStruct(typed)
		if err != nil {
			return nil, "", fmt.Errorf("patch metadata of %s: %w", desired.GroupVersionKind(), err)
		}
		patch, err := strategicpatch.CreateThreeWayMergePatch(original, modified, current, meta, true)
		if err != nil {
			return nil, "", fmt.Errorf("compute strategic merge patch: %w", err)
		}
		return patch, types.StrategicMergePatchType, nil
	}
	patch, err := jsonmergepatch.CreateThreeWayJSONMergePatch(original, modified, current)
	if err != nil {
		return nil, "", fmt.Errorf("compute JSON merge patch: %w", err)
	}
	return patch, types.MergePatchType, nil
}

// finishPatch adds what the 3-way merge does not cover — the owner reference and the removal of the
// record annotation of the other kind — and returns nil when the patch changes nothing.
func finishPatch(patch []byte, r *request, rec *record) ([]byte, error) {
	var p map[string]any
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, fmt.Errorf("decode patch: %w", err)
	}
	ann := r.current.GetAnnotations()
	if _, stale := ann[rec.remove]; stale {
		if err := unstructured.SetNestedField(p, nil, "metadata", "annotations", rec.remove); err != nil {
			return nil, err
		}
	}
	if owner := r.opts.Owner; owner != nil && !hasOwner(r.current, owner) {
		refs := withOwner(r.current.GetOwnerReferences(), owner)
		// The full list: a JSON merge patch replaces lists whole, and a strategic merge patch merges
		// this list by UID.
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetOwnerReferences(refs)
		list, _, _ := unstructured.NestedSlice(u.Object, "metadata", "ownerReferences")
		if err := unstructured.SetNestedSlice(p, list, "metadata", "ownerReferences"); err != nil {
			return nil, err
		}
	}
	if len(p) == 0 {
		return nil, nil
	}
	return json.Marshal(p)
}

// create creates the object with its last-applied record and owner.
func create(ctx context.Context, r *request, rec *record) (Result, error) {
	obj := r.desired
	if rec != nil {
		if !rec.inline() {
			if err := r.store.Put(ctx, r.storeKey(), rec.data); err != nil {
				return Result{}, fmt.Errorf("store last-applied record: %w", err)
			}
		}
		obj = rec.annotate(obj)
	}
	if r.opts.Owner != nil {
		obj = obj.DeepCopy()
		obj.SetOwnerReferences(withOwner(obj.GetOwnerReferences(), r.opts.Owner))
	}
	created, err := r.client.Create(ctx, obj, metav1.CreateOptions{FieldManager: r.opts.FieldManager})
	if err != nil {
		return Result{}, err
	}
	res := r.result
	res.Object, res.Operation = created, Created
	return res, nil
}
