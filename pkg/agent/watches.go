package agent

import (
	"context"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// objectWatches makes status event-driven: it watches the objects the works applied and requeues a
// work as soon as one of its objects changes or goes away on the spoke, instead of waiting for the
// periodic resync. Watches are metadata-only (a change of any field, status included, bumps the
// resourceVersion) and scoped to the resources and namespaces the works use.
type objectWatches struct {
	ctx     context.Context // the agent's lifetime: the watches run until it ends
	client  metadata.Interface
	enqueue func(work string)

	mu       sync.Mutex
	watching map[watchScope]*scopeWatch
	// object → the works that hold it: nearly always one, so a slice rather than a set (a map per
	// applied object was a tenth of the agent's heap)
	byObject map[objectKey][]string
	byWork   map[string][]trackedObject
}

// scopeWatch is the informer of one scope, stopped once no work holds an object in it.
type scopeWatch struct {
	inf  cache.SharedIndexInformer
	stop context.CancelFunc
	refs int // objects of tracked works in the scope
}

// trackedObject is an object a work holds: its key and its scope are derived from it, not kept (a work's
// list of them is kept for as long as the work).
type trackedObject struct {
	resource        schema.GroupVersionResource
	namespace, name string
}

func (o trackedObject) key() objectKey {
	return objectKey{gr: o.resource.GroupResource(), namespace: o.namespace, name: o.name}
}

func (o trackedObject) scope() watchScope {
	return watchScope{gvr: o.resource, namespace: o.namespace}
}

type watchScope struct {
	gvr       schema.GroupVersionResource
	namespace string // "" for cluster-scoped resources
}

type objectKey struct {
	gr              schema.GroupResource
	namespace, name string
}

func newObjectWatches(ctx context.Context, client metadata.Interface, enqueue func(string)) *objectWatches {
	return &objectWatches{
		ctx:      ctx,
		client:   client,
		enqueue:  enqueue,
		watching: map[watchScope]*scopeWatch{},
		byObject: map[objectKey][]string{},
		byWork:   map[string][]trackedObject{},
	}
}

// watch makes sure objects of resource in namespace ("" for cluster-scoped ones) are watched.
func (w *objectWatches) watch(resource schema.GroupVersionResource, namespace string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watchLocked(watchScope{gvr: resource, namespace: namespace})
}

func (w *objectWatches) watchLocked(s watchScope) *scopeWatch {
	sw := w.watching[s]
	if sw == nil {
		sw = w.start(s)
		w.watching[s] = sw
	}
	return sw
}

// exists answers from the watch whether an object exists; known is false until the watch has synced.
func (w *objectWatches) exists(resource schema.GroupVersionResource, namespace, name string) (exists, known bool) {
	obj, known := w.objectMeta(resource, namespace, name)
	return obj != nil, known
}

// track records the objects of a work, so that a change to one of them requeues the work.
func (w *objectWatches) track(work string, results []manifestResult) {
	objs := make([]trackedObject, 0, len(results)) // of its length: it is kept
	for i := range results {
		r := &results[i]
		if r.result.Resource.Resource == "" {
			continue
		}
		objs = append(objs, trackedObject{resource: r.result.Resource, namespace: r.meta.Namespace, name: r.meta.Name})
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// The new references first, so that a scope the work keeps using is not stopped and restarted.
	for _, o := range objs {
		w.watchLocked(o.scope()).refs++
		if key := o.key(); !slices.Contains(w.byObject[key], work) {
			w.byObject[key] = append(w.byObject[key], work)
		}
	}
	old := w.byWork[work]
	w.byWork[work] = objs
	w.release(work, old, objs)
}

// forget drops a work's objects.
func (w *objectWatches) forget(work string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.release(work, w.byWork[work], nil)
	delete(w.byWork, work)
}

// release drops the references of a work's old objects that it no longer holds, and stops the
// watches nothing needs any more.
func (w *objectWatches) release(work string, old, current []trackedObject) {
	holds := map[objectKey]bool{}
	for _, o := range current {
		holds[o.key()] = true
	}
	for _, o := range old {
		if key := o.key(); !holds[key] {
			if rest := slices.DeleteFunc(w.byObject[key], func(held string) bool { return held == work }); len(rest) > 0 {
				w.byObject[key] = rest
			} else {
				delete(w.byObject, key)
			}
		}
		if sw := w.watching[o.scope()]; sw != nil {
			sw.refs--
			if sw.refs <= 0 {
				sw.stop()
				delete(w.watching, o.scope())
			}
		}
	}
}

// start runs a metadata informer for one scope until the agent stops or the scope is released.
func (w *objectWatches) start(s watchScope) *scopeWatch {
	inf := metadatainformer.NewFilteredMetadataInformer(w.client, s.gvr, s.namespace, 0, cache.Indexers{}, nil).Informer()
	_ = inf.SetTransform(watchedObjectOf) // (refused only once the informer runs)
	notify := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		m, ok := obj.(*watchedObject)
		if !ok {
			return
		}
		key := objectKey{gr: s.gvr.GroupResource(), namespace: m.namespace, name: m.name}
		w.mu.Lock()
		works := slices.Clone(w.byObject[key])
		w.mu.Unlock()
		for _, work := range works {
			w.enqueue(work)
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: notify,
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*watchedObject)
			c, ok2 := cur.(*watchedObject)
			if ok1 && ok2 && o.resourceVersion == c.resourceVersion {
				return
			}
			notify(cur)
		},
		DeleteFunc: notify,
	})
	ctx, stop := context.WithCancel(w.ctx)
	go inf.Run(ctx.Done())
	return &scopeWatch{inf: inf, stop: stop}
}
