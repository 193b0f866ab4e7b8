package agent

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	watching map[watchScope]cache.SharedIndexInformer
	byObject map[objectKey]map[string]bool // object → works that hold it
	byWork   map[string][]objectKey
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
		watching: map[watchScope]cache.SharedIndexInformer{},
		byObject: map[objectKey]map[string]bool{},
		byWork:   map[string][]objectKey{},
	}
}

// watch makes sure objects of resource in namespace ("" for cluster-scoped ones) are watched.
func (w *objectWatches) watch(resource schema.GroupVersionResource, namespace string) {
	s := watchScope{gvr: resource, namespace: namespace}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watching[s] == nil {
		w.watching[s] = w.start(s)
	}
}

// exists answers from the watch whether an object exists; known is false until the watch has synced.
func (w *objectWatches) exists(resource schema.GroupVersionResource, namespace, name string) (exists, known bool) {
	w.mu.Lock()
	inf := w.watching[watchScope{gvr: resource, namespace: namespace}]
	w.mu.Unlock()
	if inf == nil || !inf.HasSynced() {
		return false, false
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	_, exists, err := inf.GetStore().GetByKey(key)
	return exists, err == nil
}

// track records the objects of a work, so that a change to one of them requeues the work.
func (w *objectWatches) track(work string, results []manifestResult) {
	var keys []objectKey
	for i := range results {
		r := &results[i]
		if r.result.Resource.Resource == "" {
			continue
		}
		keys = append(keys, objectKey{gr: r.result.Resource.GroupResource(), namespace: r.meta.Namespace, name: r.meta.Name})
		w.watch(r.result.Resource, r.meta.Namespace)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.untrackLocked(work)
	w.byWork[work] = keys
	for _, k := range keys {
		if w.byObject[k] == nil {
			w.byObject[k] = map[string]bool{}
		}
		w.byObject[k][work] = true
	}
}

// forget drops a work's objects.
func (w *objectWatches) forget(work string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.untrackLocked(work)
}

func (w *objectWatches) untrackLocked(work string) {
	for _, k := range w.byWork[work] {
		delete(w.byObject[k], work)
		if len(w.byObject[k]) == 0 {
			delete(w.byObject, k)
		}
	}
	delete(w.byWork, work)
}

// start runs a metadata informer for one scope until the agent stops.
func (w *objectWatches) start(s watchScope) cache.SharedIndexInformer {
	inf := metadatainformer.NewFilteredMetadataInformer(w.client, s.gvr, s.namespace, 0, cache.Indexers{}, nil).Informer()
	notify := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		m, ok := obj.(metav1.Object)
		if !ok {
			return
		}
		key := objectKey{gr: s.gvr.GroupResource(), namespace: m.GetNamespace(), name: m.GetName()}
		w.mu.Lock()
		works := make([]string, 0, len(w.byObject[key]))
		for work := range w.byObject[key] {
			works = append(works, work)
		}
		w.mu.Unlock()
		for _, work := range works {
			w.enqueue(work)
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: notify,
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(metav1.Object)
			c, ok2 := cur.(metav1.Object)
			if ok1 && ok2 && o.GetResourceVersion() == c.GetResourceVersion() {
				return
			}
			notify(cur)
		},
		DeleteFunc: notify,
	})
	go inf.Run(w.ctx.Done())
	return inf
}
