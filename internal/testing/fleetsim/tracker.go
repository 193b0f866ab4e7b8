package fleetsim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/relist"
)

// WorkTracker follows every ManifestWork on the hub through one watch, keeping of each only its Work
// (a transformed cache: the hub's works are kilobytes each, and a benchmark follows 100,000 of them).
// It counts them, says when each generation was first seen, and hands the simulated agents what to
// report on (Subscribe: as each work changes), so that nothing lists the works in a loop.
type WorkTracker struct {
	informer cache.SharedIndexInformer

	mu        sync.Mutex
	works     map[string]*Work
	listeners []*func(*Work)
	decodeErr error
	// delivering is held while listeners are called, so that each gets the works in the order they
	// were recorded: a subscriber's first works before any recorded after it subscribed.
	delivering sync.Mutex
}

// NewWorkTracker returns a tracker of the works client reaches, in every namespace. Start starts it.
func NewWorkTracker(client workclient.Interface) (*WorkTracker, error) {
	t := &WorkTracker{works: map[string]*Work{}}
	// As ferry-hub's: LISTs in pages, or a relist of 100,000 works outlasts the API server's timeout.
	works := client.WorkV1().ManifestWorks(metav1.NamespaceAll)
	t.informer = cache.NewSharedIndexInformer(relist.Paged(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return works.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return works.Watch(ctx, opts)
		},
	}), &workv1.ManifestWork{}, 0, cache.Indexers{})
	if err := t.informer.SetTransform(t.slim); err != nil {
		return nil, fmt.Errorf("work tracker: %w", err)
	}
	_, err := t.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.record(obj) },
		UpdateFunc: func(_, obj any) { t.record(obj) },
		DeleteFunc: t.forget,
	})
	if err != nil {
		return nil, fmt.Errorf("work tracker: %w", err)
	}
	return t, nil
}

// Start runs the tracker until ctx is done and returns once it has seen every work that exists now.
func (t *WorkTracker) Start(ctx context.Context) error {
	go t.informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), t.informer.HasSynced) {
		return fmt.Errorf("work tracker: the first list of ManifestWorks did not finish: %w", context.Cause(ctx))
	}
	return nil
}

// slim is the informer's transform: a ManifestWork becomes its Work before the informer stores it.
func (t *WorkTracker) slim(obj any) (any, error) {
	mw, ok := obj.(*workv1.ManifestWork)
	if !ok {
		return obj, nil // a deletion's last known state, already slim
	}
	w, err := WorkOf(mw)
	if err != nil {
		// Returned, the error would make the informer watch again and again; the work is kept
		// without its manifests and the error is reported by Err.
		t.mu.Lock()
		if t.decodeErr == nil {
			t.decodeErr = err
		}
		t.mu.Unlock()
		w = &Work{ObjectMeta: *mw.ObjectMeta.DeepCopy()}
		w.ManagedFields, w.Annotations = nil, nil
	}
	return w, nil
}

func (t *WorkTracker) record(obj any) {
	w, ok := obj.(*Work)
	if !ok {
		return
	}
	now := time.Now()
	tracked := *w // the informer's object stays as the informer made it
	tracked.Seen = now
	t.mu.Lock()
	if old, ok := t.works[w.Key()]; ok && old.Generation == w.Generation {
		tracked.Seen = old.Seen
	}
	t.works[w.Key()] = &tracked
	listeners := slices.Clone(t.listeners)
	t.mu.Unlock()
	if len(listeners) == 0 {
		return
	}
	t.delivering.Lock()
	defer t.delivering.Unlock()
	for _, f := range listeners {
		(*f)(&tracked)
	}
}

// Subscribe calls f with every work the tracker holds now and then with each work as the tracker
// records it (a new generation, a new status, the same work again after the watch restarted), until
// the returned cancel is called; a work may come twice, but never an older version after a newer one.
// f runs on the tracker's watch: it must return quickly; it may call the tracker, but not Subscribe.
func (t *WorkTracker) Subscribe(f func(*Work)) (cancel func()) {
	t.delivering.Lock()
	defer t.delivering.Unlock()
	t.mu.Lock()
	listener := &f
	t.listeners = append(t.listeners, listener)
	now := make([]*Work, 0, len(t.works))
	for _, w := range t.works {
		now = append(now, w)
	}
	t.mu.Unlock()
	for _, w := range now {
		f(w)
	}
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.listeners = slices.DeleteFunc(t.listeners, func(l *func(*Work)) bool { return l == listener })
	}
}

func (t *WorkTracker) forget(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if w, ok := obj.(*Work); ok {
		t.mu.Lock()
		delete(t.works, w.Key())
		t.mu.Unlock()
	}
}

// Count is how many works exist.
func (t *WorkTracker) Count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.works)
}

// Get returns the work of that namespace and name, if it exists. The Work is not changed afterwards:
// a later change of the work is a new Work.
func (t *WorkTracker) Get(namespace, name string) (*Work, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.works[namespace+"/"+name]
	return w, ok
}

// Works returns every work, ordered by namespace/name.
func (t *WorkTracker) Works() []*Work {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*Work, 0, len(t.works))
	for _, k := range slices.Sorted(maps.Keys(t.works)) {
		out = append(out, t.works[k])
	}
	return out
}

// Range calls f for every work, in no particular order, with the tracker locked: cheaper than Works
// for 100,000 works polled every moment. f must not call the tracker.
func (t *WorkTracker) Range(f func(*Work)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, w := range t.works {
		f(w)
	}
}

// Err is the first work whose manifests could not be read, if any: the agents cannot report on it.
func (t *WorkTracker) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.decodeErr == nil {
		return nil
	}
	return fmt.Errorf("work tracker: %w", t.decodeErr)
}
