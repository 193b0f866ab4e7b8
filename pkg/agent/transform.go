package agent

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// dropManagedFields is the transform of every informer of the agent: an object's managedFields are
// kept in no cache. The agent never reads them from a cache (its server-side applies are the API
// server's to merge), and they are often the largest part of an object's metadata — of a ManifestWork
// a kilobyte, and of the metadata the agent watches of each applied object, most of it.
var dropManagedFields cache.TransformFunc = func(obj any) (any, error) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
