package agent

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ferry-mc/ferry/pkg/apply"
)

// Two works whose manifests name the same object with different content would take turns overwriting
// it for ever: each write is an event of the object's watch, which wakes the other work up, which
// writes its own content back. The rule that ends it: the work whose AppliedManifestWork is the first
// AppliedManifestWork among the object's owners keeps the object; a later work whose manifest differs
// from the object's last-applied record writes nothing and reports ReasonObjectOwnedByAnotherWork.
// Works with identical manifests share the object, as before.

// ReasonObjectOwnedByAnotherWork: the manifest's object is applied by another ManifestWork, with other
// content.
const ReasonObjectOwnedByAnotherWork = "ObjectOwnedByAnotherWork"

// objectOwnedByAnotherWorkError is a manifest left unapplied because another work holds its object.
type objectOwnedByAnotherWorkError struct {
	object string // "ConfigMap ns/name"
	work   string // the ManifestWork that holds it, or its AppliedManifestWork when unknown
}

func (e *objectOwnedByAnotherWorkError) Error() string {
	return fmt.Sprintf("%s is applied by ManifestWork %q with a different manifest; this work does not overwrite it. "+
		"Make the two manifests equal to share the object, or remove it from one of the works", e.object, e.work)
}

func isObjectOwnedByAnotherWork(err error) bool {
	var e *objectOwnedByAnotherWorkError
	return errors.As(err, &e)
}

// heldByAnotherWork reports whether the manifest's object is held by an earlier work with other content
// (see the rule above); if so it records that on r, which is then not to be applied. It decides from
// the watch of the object's scope alone, and applies as before whenever that cannot tell: the watch
// has not synced, the object has no last-applied record to compare with (ServerSideApply), or the
// strategy never overwrites (CreateOnly, ReadOnly).
func (c *controller) heldByAnotherWork(workName string, r *manifestResult, obj *unstructured.Unstructured, opts apply.Options) bool {
	mapping := opts.Mapping
	if c.watches == nil || mapping == nil || opts.Owner == nil || opts.Strategy == apply.CreateOnly || opts.Strategy == apply.ReadOnly {
		return false
	}
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	namespace := ""
	if namespaced {
		namespace = obj.GetNamespace()
	}
	live, known := c.watches.objectMeta(mapping.Resource, namespace, obj.GetName())
	if !known || live == nil {
		return false
	}
	holder := live.heldBy
	if holder.uid == "" || holder.uid == opts.Owner.UID {
		return false
	}
	applied := live.appliedHash
	if applied == "" {
		return false
	}
	if want, err := apply.RecordHash(obj, namespaced); err != nil || want == applied {
		return false // identical: shared; an invalid manifest is Apply's to report
	}
	work := holder.name
	if amw, err := c.amwLister.Get(holder.name); err == nil && amw.Spec.ManifestWorkName != "" {
		work = amw.Spec.ManifestWorkName
	}
	r.err = &objectOwnedByAnotherWorkError{object: describeObject(obj.GetKind(), namespace, obj.GetName()), work: work}
	// Resolved, so that the object is watched for this work too: a change of the holder (its manifest
	// becomes equal, it lets go of the object) requeues this work.
	r.result.Resource, r.result.Namespaced = mapping.Resource, namespaced
	r.meta.Resource = mapping.Resource.Resource
	c.log.V(1).Info("manifest not applied: its object is held by another work", "work", workName,
		"object", describeObject(obj.GetKind(), namespace, obj.GetName()), "heldBy", work)
	return true
}

// objectMeta returns the watched metadata of an object, nil when it does not exist; known is false when
// the scope is not watched or its watch has not synced yet.
func (w *objectWatches) objectMeta(resource schema.GroupVersionResource, namespace, name string) (obj *watchedObject, known bool) {
	w.mu.Lock()
	sw := w.watching[watchScope{gvr: resource, namespace: namespace}]
	w.mu.Unlock()
	if sw == nil || !sw.inf.HasSynced() {
		return nil, false
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	item, exists, err := sw.inf.GetStore().GetByKey(key)
	if err != nil {
		return nil, false
	}
	if !exists {
		return nil, true
	}
	m, ok := item.(*watchedObject)
	return m, ok
}

func describeObject(kind, namespace, name string) string {
	if namespace != "" {
		return fmt.Sprintf("%s %s/%s", kind, namespace, name)
	}
	return fmt.Sprintf("%s %s", kind, name)
}
