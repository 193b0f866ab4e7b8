package relist

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// TestInformerFillsItsCacheWhileItsCollectionChurns is ferry-hub's ManifestWork informer during a
// rollback at 10,000 clusters, at a size a test can afford: a collection larger than kube-apiserver
// sends ahead of a client that is not reading, events arriving all the time, and a client that takes
// each event a little slowly, as a process on busy shared cores does. The informer (NewInformer, as
// ferry-hub builds its own) has to fill its cache with LISTs, and then follow. With client-go's default (run with
// KUBE_FEATURE_WatchListClient=true) it streams the collection in a watch instead: no LIST is made,
// and here kube-apiserver closed that stream (apiserver_terminated_watchers_total) and the informer
// started it over, filling in 2.7 to 17.5 s instead of 0.6 s.
func TestInformerFillsItsCacheWhileItsCollectionChurns(t *testing.T) {
	ListThenWatch()
	cfg := *shared.Get(t).Hub.Config
	cfg.QPS, cfg.Burst = -1, -1 // the test's writes are paced by the test
	client := kubernetes.NewForConfigOrDie(&cfg)
	ctx := t.Context()

	const namespace, large, churning = "churn", 1000, 20
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// 1,000 ConfigMaps of 24 KiB: 24 MiB to stream, far past what HTTP/2 lets the server send ahead of
	// a client that is not reading.
	payload := strings.Repeat("x", 24<<10)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range large + churning {
		g.Go(func() error {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i), Namespace: namespace}}
			if i < large {
				cm.Data = map[string]string{"payload": payload}
			}
			_, err := client.CoreV1().ConfigMaps(namespace).Create(gctx, cm, metav1.CreateOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("create ConfigMaps: %v", err)
	}

	// The churn: 300 small writes a second, until the test ends.
	churnCtx, stopChurn := context.WithCancel(ctx)
	var churn sync.WaitGroup
	var churned atomic.Int64
	churn.Go(func() {
		tick := time.NewTicker(time.Second / 300)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-churnCtx.Done():
				return
			case <-tick.C:
			}
			name := fmt.Sprintf("cm-%04d", large+n%churning)
			patch := fmt.Sprintf(`{"data":{"n":"%d"}}`, n)
			// A failed write only means less churn; the informer is what is under test.
			if _, err := client.CoreV1().ConfigMaps(namespace).Patch(churnCtx, name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err == nil {
				churned.Add(1)
			}
		}
	})
	t.Cleanup(func() { stopChurn(); churn.Wait() })

	informer := NewInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return client.CoreV1().ConfigMaps(namespace).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := client.CoreV1().ConfigMaps(namespace).Watch(ctx, opts)
			if err != nil {
				return nil, err
			}
			return newSlowWatch(w, 2*time.Millisecond), nil
		},
	}, &corev1.ConfigMap{}, 0, cache.Indexers{})
	listsBefore := listRequests(t, client)
	informerCtx, stopInformer := context.WithCancel(ctx)
	defer stopInformer()
	go informer.RunWithContext(informerCtx)

	start := time.Now()
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		return informer.HasSynced(), nil
	}); err != nil {
		t.Fatalf("the informer did not fill its cache of %d ConfigMaps within 90 s while they changed 300 times a second", large+churning)
	}
	t.Logf("the informer filled its cache in %v; %d churn writes", time.Since(start).Round(time.Millisecond), churned.Load())
	if lists := listRequests(t, client) - listsBefore; lists == 0 {
		t.Errorf("the informer filled its cache without a LIST of ConfigMaps: it streamed them in a watch, which kube-apiserver closes when new events do not fit its buffer while it streams")
	}

	// And it follows: an object created now reaches it.
	if _, err := client.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after", Namespace: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		_, exists, err := informer.GetStore().GetByKey(namespace + "/after")
		return exists, err
	}); err != nil {
		t.Fatalf("a ConfigMap created after the informer filled did not reach it within 60 s")
	}
}

// slowWatch passes a watch's events on, each after delay: a consumer on busy shared cores.
type slowWatch struct {
	watch.Interface
	result chan watch.Event
	stop   chan struct{}
	once   sync.Once
}

func newSlowWatch(w watch.Interface, delay time.Duration) *slowWatch {
	s := &slowWatch{Interface: w, result: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(s.result)
		for ev := range w.ResultChan() {
			select {
			case <-time.After(delay):
			case <-s.stop:
				return
			}
			select {
			case s.result <- ev:
			case <-s.stop:
				return
			}
		}
	}()
	return s
}

func (s *slowWatch) ResultChan() <-chan watch.Event { return s.result }

func (s *slowWatch) Stop() {
	s.once.Do(func() { close(s.stop) })
	s.Interface.Stop()
}

// listRequests is how many LISTs of ConfigMaps kube-apiserver has answered, from its metrics.
func listRequests(t *testing.T, client kubernetes.Interface) int {
	t.Helper()
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("read kube-apiserver's metrics: %v", err)
	}
	n := 0
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="configmaps"`) || !strings.Contains(line, `verb="LIST"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		n += int(v)
	}
	return n
}
