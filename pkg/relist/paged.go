package relist

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"
	"k8s.io/klog/v2"
)

// PageSize is how many objects one LIST request of an informer asks for (client-go's pager's default).
const PageSize = 500

// Paged returns lw with every LIST it is asked for read in pages of PageSize.
//
// Why: an informer that falls behind its watch lists again at the resourceVersion it last saw, and
// client-go then asks for everything in one response, so that the watch cache can answer it. At
// 100,000 ManifestWorks (about 400 MiB of JSON) on a busy API server, that one response took longer
// than kube-apiserver's request timeout (60 s): it was cut ("stream error ... INTERNAL_ERROR"), and
// asked again, every minute, forever (bench-fleet's informer of works at 10,000 clusters). Pages are
// requests of their own, each well within the timeout. The pages are read here, and the informer
// gets the whole list: if a later page's resourceVersion has been compacted away, client-go's pager
// reads the list again in one response, as the informer would have.
func Paged(lw cache.ListerWatcher) cache.ListerWatcher {
	return &paged{inner: cache.ToListerWatcherWithContext(lw)}
}

var _ cache.ListerWatcherWithContext = &paged{}

type paged struct {
	inner cache.ListerWatcherWithContext
	// transform is the informer's transform (NewInformer), applied to each page as it is read.
	transform atomic.Pointer[cache.TransformFunc]
}

func (p *paged) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if opts.Limit != 0 || opts.Continue != "" {
		page, err := p.inner.ListWithContext(ctx, opts) // the caller pages already
		if err != nil {
			return nil, err
		}
		return page, p.transformPage(page)
	}
	if opts.ResourceVersion != "" && opts.ResourceVersion != "0" && opts.ResourceVersionMatch == "" {
		// What the reflector means by a relist at the resourceVersion it last saw: the objects as they
		// are now, at that version or later. With a limit, kube-apiserver reads a bare resourceVersion
		// as "exactly that version" instead: after an API server restart the informer would get the
		// old objects, fail to watch from that version (too old for the new watch cache), list the old
		// objects again, and never see a change (ferry-hub did so in the outage test).
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	}
	start, requests := time.Now(), 0
	pages := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
		requests++
		page, err := p.inner.ListWithContext(ctx, opts)
		if err != nil {
			return nil, err
		}
		return page, p.transformPage(page)
	}))
	pages.PageSize = PageSize
	list, _, err := pages.ListWithAlloc(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list in pages of %d: %w", PageSize, err)
	}
	if requests > 1 {
		// A large collection listed again (the informer fell behind its watch) costs the API server,
		// and this process the memory of a second copy: worth a line, where a small list is not.
		objects := meta.LenList(list)
		klog.FromContext(ctx).Info("Listed a collection in pages", "kind", kindOf(list), "objects", objects,
			"requests", requests, "took", time.Since(start).Round(time.Millisecond))
	}
	return list, nil
}

// transformPage applies the informer's transform to each object of a page as it is read. The pages
// of a list are kept until the last one is read, and the informer transforms the objects only then:
// at 100,000 ManifestWorks ferry-hub held every work whole (manifests and all) beside its cache of slim
// ones until the relist ended, well past its 1 GiB. The informer transforms them again; client-go asks
// a transform to be idempotent for that.
func (p *paged) transformPage(page runtime.Object) error {
	transform := p.transform.Load()
	if transform == nil || *transform == nil {
		return nil
	}
	items, err := meta.ExtractList(page)
	if err != nil {
		return fmt.Errorf("read a page of the list: %w", err)
	}
	for i, item := range items {
		t, err := (*transform)(item)
		if err != nil {
			return fmt.Errorf("transform a listed object: %w", err)
		}
		obj, ok := t.(runtime.Object)
		if !ok {
			return fmt.Errorf("the transform of a listed object gave a %T, not an object", t)
		}
		items[i] = obj
	}
	return meta.SetList(page, items)
}

// kindOf names the kind of a list's objects (by its first: the pager's list is of no kind).
func kindOf(list runtime.Object) string {
	var kind string
	_ = meta.EachListItem(list, func(obj runtime.Object) error {
		if kind = obj.GetObjectKind().GroupVersionKind().Kind; kind == "" {
			t := reflect.TypeOf(obj)
			if t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			kind = t.Name()
		}
		return errStop
	})
	return kind
}

// errStop ends a walk over a list early.
var errStop = errors.New("stop")

// List and Watch are for callers without a context; client-go's reflector uses the methods with one.
func (p *paged) List(opts metav1.ListOptions) (runtime.Object, error) {
	return p.ListWithContext(context.Background(), opts)
}

func (p *paged) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return p.WatchWithContext(context.Background(), opts)
}

func (p *paged) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return p.inner.WatchWithContext(ctx, opts)
}

// NewInformer is cache.NewSharedIndexInformer over Paged(lw), whose pages get the informer's transform
// as they are read: for controller-runtime's cache.Options.NewInformer.
func NewInformer(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	pages := &paged{inner: cache.ToListerWatcherWithContext(lw)}
	return &pagedInformer{SharedIndexInformer: cache.NewSharedIndexInformer(pages, obj, resync, indexers), pages: pages}
}

// pagedInformer is an informer over paged that hands its transform to the pages too.
type pagedInformer struct {
	cache.SharedIndexInformer
	pages *paged
}

func (i *pagedInformer) SetTransform(transform cache.TransformFunc) error {
	if err := i.SharedIndexInformer.SetTransform(transform); err != nil {
		return err
	}
	i.pages.transform.Store(&transform)
	return nil
}
