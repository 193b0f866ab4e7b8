package agent

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writeThroughCache bridges the moment between our own write and the informer catching up with it. Reconciling
// from the stale cached copy would compute the status just written, see a difference, and write it
// again — a wasted write that also fails on the resourceVersion. So the result of each write is kept,
// with the resourceVersions it supersedes, and used instead of a cached copy that is one of those.
//
// Writing status by merge patch does not make it unneeded: an AppliedManifestWork's status patch
// carries the resourceVersion it was computed from (eviction and the work's reconciles write the same
// object and must not overwrite each other), so a patch from a stale copy still fails, after a request;
// and a ManifestWork's status patch from a stale copy repeats what was just written.
type writeThroughCache[T metav1.Object] struct {
	mu sync.Mutex
	m  map[string]freshEntry[T]
}

type freshEntry[T metav1.Object] struct {
	obj   T
	older map[string]bool // resourceVersions obj supersedes
}

func newWriteThroughCache[T metav1.Object]() *writeThroughCache[T] {
	return &writeThroughCache[T]{m: map[string]freshEntry[T]{}}
}

// pick returns the newest known copy of the object the cache holds as cached.
func (f *writeThroughCache[T]) pick(cached T) T {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.m[cached.GetName()]
	if !ok {
		return cached
	}
	if e.older[cached.GetResourceVersion()] {
		return e.obj
	}
	// The cache has caught up, or someone else wrote since: the cache is right.
	delete(f.m, cached.GetName())
	return cached
}

// wrote records that a write turned the object at resourceVersion before into obj. obj is kept as the
// informer would keep it (compactCached, which changes it in place): in a burst of works, a full
// response (its managedFields, its lists with room to spare) kept for each work until the cache caught
// up was several megabytes.
func (f *writeThroughCache[T]) wrote(before string, obj T) {
	_, _ = compactCached(obj)
	f.mu.Lock()
	defer f.mu.Unlock()
	older := map[string]bool{before: true}
	if e, ok := f.m[obj.GetName()]; ok && e.obj.GetResourceVersion() == before {
		for rv := range e.older {
			older[rv] = true
		}
	}
	f.m[obj.GetName()] = freshEntry[T]{obj: obj, older: older}
}

// caughtUp drops what is kept of an object once its informer holds a version the kept copy does not
// supersede — pick's rule, applied at the informer's event rather than at the next reconcile: a work
// whose status was written is not reconciled again until its next resync.
func (f *writeThroughCache[T]) caughtUp(cached T) { f.pick(cached) }

// forget drops what is known about name.
func (f *writeThroughCache[T]) forget(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, name)
}
