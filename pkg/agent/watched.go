package agent

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apply"
)

// watchedObject is what the watch of an applied object keeps of it: what the agent reads (objectMeta's
// callers) and nothing else. The watch holds one per applied object, so its size is most of what each
// further object costs: a PartialObjectMetadata with its annotations map (kept to carry one hash) and
// owner list was about 700 bytes; this, with its strings, about 200.
type watchedObject struct {
	namespace, name string
	// resourceVersion tells whether the object changed since the agent last read it (unchangedApplyCache).
	resourceVersion string
	// heldBy is the first AppliedManifestWork among the object's owners: the work that keeps it when
	// two works name it (heldByAnotherWork). Zero when none is.
	heldBy appliedWorkOwner
	// appliedHash is the hash of the object's last-applied record (apply.AppliedHash), "" without one.
	appliedHash string
}

// appliedWorkOwner is an owner reference to an AppliedManifestWork.
type appliedWorkOwner struct {
	name string
	uid  types.UID
}

// watchedObjectOf is the transform of the applied objects' watches. It is idempotent, as a transform
// must be: an object it already made is given back.
var watchedObjectOf cache.TransformFunc = func(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil // a watchedObject already, or a tombstone (never transformed)
	}
	w := &watchedObject{
		namespace:       intern(m.Namespace),
		name:            m.Name,
		resourceVersion: m.ResourceVersion,
		appliedHash:     strings.Clone(apply.AppliedHash(m.Annotations)), // not a part of the record's string
	}
	if ref := firstAppliedWorkOwner(m.OwnerReferences); ref != nil {
		// The objects of a work share their owner: one copy of its name and UID for all of them.
		w.heldBy = appliedWorkOwner{name: intern(ref.Name), uid: types.UID(intern(string(ref.UID)))}
	}
	return w, nil
}

// GetObjectMeta gives the informer what it keys and compares objects by: namespace, name and
// resourceVersion (meta.Accessor).
func (w *watchedObject) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: w.namespace, Name: w.name, ResourceVersion: w.resourceVersion}
}

// firstAppliedWorkOwner returns the first AppliedManifestWork among refs, or nil.
func firstAppliedWorkOwner(refs []metav1.OwnerReference) *metav1.OwnerReference {
	for i := range refs {
		if refs[i].Kind == "AppliedManifestWork" && refs[i].APIVersion == workv1.GroupVersion.String() {
			return &refs[i]
		}
	}
	return nil
}
