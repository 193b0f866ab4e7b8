package relist

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"
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
}

func (p *paged) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if opts.Limit != 0 || opts.Continue != "" {
		return p.inner.ListWithContext(ctx, opts) // the caller pages already
	}
	if opts.ResourceVersion != "" && opts.ResourceVersion != "0" && opts.ResourceVersionMatch == "" {
		// What the reflector means by a relist at the resourceVersion it last saw: the objects as they
		// are now, at that version or later. With a limit, kube-apiserver reads a bare resourceVersion
		// as "exactly that version" instead: after an API server restart the informer would get the
		// old objects, fail to watch from that version (too old for the new watch cache), list the old
		// objects again, and never see a change (ferry-hub did so in the outage test).
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	}
	pages := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
		return p.inner.ListWithContext(ctx, opts)
	}))
	pages.PageSize = PageSize
	list, _, err := pages.ListWithAlloc(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list in pages of %d: %w", PageSize, err)
	}
	return list, nil
}

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

// NewInformer is cache.NewSharedIndexInformer over Paged(lw): for controller-runtime's
// cache.Options.NewInformer.
func NewInformer(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformer(Paged(lw), obj, resync, indexers)
}
