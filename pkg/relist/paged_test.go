package relist

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// TestPagedRelistAtAResourceVersionReadsEverythingInPages is the list an informer makes when it has
// fallen behind its watch: at the resourceVersion it last saw. client-go asks for that in one response;
// through Paged it comes in pages of PageSize, each a request of its own, and the informer still gets
// every object, at one resourceVersion.
func TestPagedRelistAtAResourceVersionReadsEverythingInPages(t *testing.T) {
	cfg := *shared.Get(t).Hub.Config
	cfg.QPS, cfg.Burst = -1, -1
	client := kubernetes.NewForConfigOrDie(&cfg)
	ctx := t.Context()

	const namespace, n = "paged", 2*PageSize + 200
	createConfigMaps(t, client, namespace, n)
	seen, err := client.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var requests, largest int
	lw := Paged(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list, err := client.CoreV1().ConfigMaps(namespace).List(ctx, opts)
			if err == nil {
				mu.Lock()
				requests++
				largest = max(largest, len(list.Items))
				mu.Unlock()
			}
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return client.CoreV1().ConfigMaps(namespace).Watch(ctx, opts)
		},
	}).(cache.ListerWatcherWithContext)

	// As client-go's reflector relists: at the last resourceVersion seen, no limit.
	list, err := lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: seen.ResourceVersion})
	if err != nil {
		t.Fatalf("relist: %v", err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != len(seen.Items) || len(items) < n {
		t.Errorf("the relist returned %d objects; want all %d", len(items), len(seen.Items))
	}
	if rv, err := meta.NewAccessor().ResourceVersion(list); err != nil || rv == "" {
		t.Errorf("the relist has no resourceVersion to watch from (%q, %v)", rv, err)
	}
	if min := (len(seen.Items) + PageSize - 1) / PageSize; requests < min || largest > PageSize {
		t.Errorf("the relist took %d requests of at most %d objects each; want at least %d, of at most %d", requests, largest, min, PageSize)
	}

	// A relist at that same resourceVersion later gets the objects as they are now, as an unpaged
	// relist does, not as they were at that version. "Not older than" that version, the API server
	// answers from its watch cache, which may be a moment behind the create: so the new object shows
	// within a deadline, where a list pinned at the version would never show it.
	if _, err := client.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := 0
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: seen.ResourceVersion})
		if err != nil {
			return false, fmt.Errorf("relist: %w", err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return false, err
		}
		got = len(items)
		return got == len(seen.Items)+1, nil
	}); err != nil {
		t.Errorf("a relist at resourceVersion %s after one more ConfigMap returned %d objects; want %d: the objects as they are now (%v)",
			seen.ResourceVersion, got, len(seen.Items)+1, err)
	}
}

// createConfigMaps makes namespace with n ConfigMaps in it, each with some data.
func createConfigMaps(t *testing.T, client kubernetes.Interface, namespace string, n int) {
	t.Helper()
	ctx := t.Context()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			_, err := client.CoreV1().ConfigMaps(namespace).Create(gctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i), Namespace: namespace},
				Data:       map[string]string{"payload": "what the informer's transform drops"}}, metav1.CreateOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("create ConfigMaps: %v", err)
	}
}

// TestPagedRelistTransformsEachPageAsItIsRead: an informer made by NewInformer with a transform (as
// controller-runtime's cache sets one) caches the transformed objects, and when it lists again (at the
// resourceVersion it last saw, in pages) each page's objects are transformed as the page arrives, before
// the next is asked for: a relist of a large collection never holds every object whole at once.
func TestPagedRelistTransformsEachPageAsItIsRead(t *testing.T) {
	ListThenWatch() // as ferry-hub does: the informer fills by LIST, not by a watch-list stream
	cfg := *shared.Get(t).Hub.Config
	cfg.QPS, cfg.Burst = -1, -1
	client := kubernetes.NewForConfigOrDie(&cfg)
	const namespace, n = "paged-transform", 2*PageSize + 100
	createConfigMaps(t, client, namespace, n)

	var mu sync.Mutex
	var whole []int // per LIST request: how many objects listed before it were not yet transformed
	transformed, listed := 0, 0
	informer := NewInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			mu.Lock()
			whole = append(whole, listed-transformed)
			mu.Unlock()
			list, err := client.CoreV1().ConfigMaps(namespace).List(ctx, opts)
			if err == nil {
				mu.Lock()
				listed += len(list.Items)
				mu.Unlock()
			}
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return client.CoreV1().ConfigMaps(namespace).Watch(ctx, opts)
		},
	}, &corev1.ConfigMap{}, 0, cache.Indexers{})
	if err := informer.SetTransform(func(obj any) (any, error) {
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Data != nil {
			cm.Data = nil
			mu.Lock()
			transformed++
			mu.Unlock()
		}
		return obj, nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	go informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("the informer never synced")
	}
	items := informer.GetStore().List()
	if len(items) != n {
		t.Fatalf("the informer caches %d ConfigMaps; want %d", len(items), n)
	}
	for _, item := range items {
		if cm := item.(*corev1.ConfigMap); cm.Data != nil {
			t.Fatalf("ConfigMap %s cached with its data; want the transformed object", cm.Name)
		}
	}

	// The relist the informer makes when it falls behind its watch: at the resourceVersion it last saw.
	mu.Lock()
	whole, transformed, listed = nil, 0, 0
	mu.Unlock()
	list, err := informer.(*pagedInformer).pages.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: informer.LastSyncResourceVersion()})
	if err != nil {
		t.Fatalf("relist: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(whole) < 3 {
		t.Fatalf("the relist took %d requests; want pages of %d for %d objects", len(whole), PageSize, n)
	}
	for i, w := range whole {
		if w != 0 {
			t.Errorf("request %d of the relist was made with %d objects of earlier pages not yet transformed; want each page transformed as it is read", i+1, w)
		}
	}
	relisted, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	if len(relisted) != n || transformed != n {
		t.Fatalf("the relist gave %d ConfigMaps, %d transformed; want %d, all", len(relisted), transformed, n)
	}
	for _, obj := range relisted {
		if cm := obj.(*corev1.ConfigMap); cm.Data != nil {
			t.Fatalf("ConfigMap %s relisted with its data; want the transformed object", cm.Name)
		}
	}
}
