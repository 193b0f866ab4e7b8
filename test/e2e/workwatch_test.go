package e2e

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1client "open-cluster-management.io/api/client/work/clientset/versioned/typed/work/v1"
	workinformers "open-cluster-management.io/api/client/work/informers/externalversions"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/workreport"
)

// The works of the benchmarks and of the tests that time them: ConfigMaps in namespace memNamespace of
// the spoke, created on the hub by many clients at once, as a pipeline or a person with a script does.

// memNamespace is the spoke namespace the works' ConfigMaps are in; the test creates it.
const memNamespace = "mem"

// configMapsWork is the work name of one ConfigMap per name in cms, in memNamespace, each with data
// k: value.
func configMapsWork(name, value string, cms ...string) *workv1.ManifestWork {
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, cm := range cms {
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: fmt.Appendf(nil,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q},"data":{"k":%q}}`, cm, memNamespace, value)}})
	}
	return w
}

// memoryWork is work number i: five ConfigMaps, cm-<i>-0 to cm-<i>-4.
func memoryWork(i int) *workv1.ManifestWork { return memoryWorkWithValue(i, "v") }

// memoryWorkWithValue is memoryWork(i) with value as its ConfigMaps' data.
func memoryWorkWithValue(i int, value string) *workv1.ManifestWork {
	var cms []string
	for j := range 5 {
		cms = append(cms, fmt.Sprintf("cm-%04d-%d", i, j))
	}
	return configMapsWork(memoryWorkName(i), value, cms...)
}

func memoryWorkName(i int) string { return fmt.Sprintf("mem-%04d", i) }

// memoryWorkNames are the names of the works numbered from to to.
func memoryWorkNames(from, to int) []string {
	var names []string
	for i := from; i < to; i++ {
		names = append(names, memoryWorkName(i))
	}
	return names
}

// workOfConfigMap is the name of the memory work a ConfigMap of it belongs to (cm-0042-3: mem-0042), or
// "" for another ConfigMap.
func workOfConfigMap(cm string) string {
	parts := strings.Split(cm, "-")
	if len(parts) != 3 || parts[0] != "cm" {
		return ""
	}
	return "mem-" + parts[1]
}

// createWorks creates the works numbered from to to with 16 clients at once and returns when each
// create was sent, by work name.
func createWorks(ctx context.Context, works workv1client.ManifestWorkInterface, from, to int) (map[string]time.Time, error) {
	var mu sync.Mutex
	sent := map[string]time.Time{}
	var g errgroup.Group
	g.SetLimit(16)
	for i := from; i < to; i++ {
		w := memoryWork(i)
		g.Go(func() error {
			at := time.Now()
			if _, err := works.Create(ctx, w, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create work %s: %w", w.Name, err)
			}
			mu.Lock()
			sent[w.Name] = at
			mu.Unlock()
			return nil
		})
	}
	return sent, g.Wait()
}

// appliedWatch follows the works of a cluster namespace on the hub with an informer and records when
// each first showed its current generation Applied, as the event reached the test: the hub's view of
// the round trip through the agent, without a request per work.
type appliedWatch struct {
	mu      sync.Mutex
	applied map[string]appliedAt
	// changed gets a value, without blocking, when a work is first seen Applied.
	changed chan struct{}
}

// appliedAt is when a generation of a work was first seen Applied.
type appliedAt struct {
	generation int64
	at         time.Time
}

// watchApplied starts an appliedWatch of namespace on the hub, until the test ends.
func watchApplied(t testing.TB, hub workclient.Interface, namespace string) *appliedWatch {
	t.Helper()
	w := &appliedWatch{applied: map[string]appliedAt{}, changed: make(chan struct{}, 1)}
	factory := workinformers.NewSharedInformerFactoryWithOptions(hub, 0, workinformers.WithNamespace(namespace))
	informer := factory.Work().V1().ManifestWorks().Informer()
	record := func(obj any) {
		mw, ok := obj.(*workv1.ManifestWork)
		if !ok || workreport.WorkStatus(mw.Status.Conditions, workv1.WorkApplied, mw.Generation) != metav1.ConditionTrue {
			return
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		if seen, ok := w.applied[mw.Name]; ok && seen.generation >= mw.Generation {
			return
		}
		w.applied[mw.Name] = appliedAt{generation: mw.Generation, at: now}
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    record,
		UpdateFunc: func(_, obj any) { record(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	startInformers(t, factory)
	return w
}

// at is when the work name was first seen Applied (its latest generation seen so).
func (w *appliedWatch) at(name string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	a, ok := w.applied[name]
	return a.at, ok
}

// count is how many of names have been seen Applied.
func (w *appliedWatch) count(names []string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, name := range names {
		if _, ok := w.applied[name]; ok {
			n++
		}
	}
	return n
}

// wait waits until every work of names has been seen Applied and returns the latest of those times;
// after timeout it fails the test with how many were.
func (w *appliedWatch) wait(t testing.TB, what string, names []string, timeout time.Duration) time.Time {
	t.Helper()
	applied, last := w.waitProgress(t, names, timeout, timeout)
	if applied < len(names) {
		t.Fatalf("%s: %d of %d works Applied on the hub after %s", what, applied, len(names), timeout)
	}
	return last
}

// waitProgress waits until every work of names has been seen Applied, or no further one has been for
// idle (the agent has stalled), or timeout has passed; it returns how many were, and the latest time one
// was.
func (w *appliedWatch) waitProgress(t testing.TB, names []string, idle, timeout time.Duration) (applied int, last time.Time) {
	t.Helper()
	deadline, quiet := time.NewTimer(timeout), time.NewTimer(idle)
	defer deadline.Stop()
	defer quiet.Stop()
	applied = w.count(names)
	for applied < len(names) {
		select {
		case <-w.changed:
			if n := w.count(names); n > applied {
				applied = n
				quiet.Reset(idle)
			}
		case <-quiet.C:
			return applied, w.latest(names)
		case <-deadline.C:
			return applied, w.latest(names)
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}
	return applied, w.latest(names)
}

// latest is the latest time a work of names was first seen Applied.
func (w *appliedWatch) latest(names []string) time.Time {
	var last time.Time
	for _, name := range names {
		if at, _ := w.at(name); at.After(last) {
			last = at
		}
	}
	return last
}

// spokeWrites follows the ConfigMaps of memNamespace on a spoke with an informer and counts what was
// written to each: its creations, its deletions and the changes of its resourceVersion after it was
// created. An agent applying a work once creates each object once and then leaves it be: a second
// creation is an object deleted and made again, an update one written again though its manifest did not
// change.
type spokeWrites struct {
	mu   sync.Mutex
	objs map[string]*objectWrites
}

// objectWrites is what was seen of one ConfigMap.
type objectWrites struct {
	uid                       types.UID
	created                   time.Time // when its first creation reached the test
	creates, deletes, updates int
}

// watchSpokeWrites starts a spokeWrites of the spoke kube, until the test ends.
func watchSpokeWrites(t testing.TB, kube kubernetes.Interface) *spokeWrites {
	t.Helper()
	s := &spokeWrites{objs: map[string]*objectWrites{}}
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(memNamespace))
	informer := factory.Core().V1().ConfigMaps().Informer()
	object := func(obj any) (*corev1.ConfigMap, *objectWrites) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			return nil, nil
		}
		o := s.objs[cm.Name]
		if o == nil {
			o = &objectWrites{}
			s.objs[cm.Name] = o
		}
		return cm, o
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			now := time.Now()
			s.mu.Lock()
			defer s.mu.Unlock()
			if cm, o := object(obj); cm != nil {
				if o.creates == 0 {
					o.created = now
				}
				o.uid = cm.UID
				o.creates++
			}
		},
		UpdateFunc: func(old, obj any) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if cm, o := object(obj); cm != nil && cm.ResourceVersion != old.(*corev1.ConfigMap).ResourceVersion {
				o.updates++
			}
		},
		DeleteFunc: func(obj any) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if cm, o := object(obj); cm != nil {
				o.deletes++
			}
		},
	}); err != nil {
		t.Fatal(err)
	}
	startInformers(t, factory)
	return s
}

// writeCounts sums what was written to the ConfigMaps of some works.
type writeCounts struct {
	// Objects is how many ConfigMaps were seen; Recreated how many were created more than once, Deleted
	// how many deleted, Updates the updates of all of them after their creation.
	Objects, Recreated, Deleted, Updates int
}

func (c writeCounts) String() string {
	return fmt.Sprintf("%d ConfigMaps, %d created more than once, %d deleted, %d updates after their creation", c.Objects, c.Recreated, c.Deleted, c.Updates)
}

// counts sums the writes of the ConfigMaps of the works names.
func (s *spokeWrites) counts(names []string) writeCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	var c writeCounts
	for cm, o := range s.objs {
		if !slices.Contains(names, workOfConfigMap(cm)) {
			continue
		}
		c.Objects++
		if o.creates > 1 {
			c.Recreated++
		}
		if o.deletes > 0 {
			c.Deleted++
		}
		c.Updates += o.updates
	}
	return c
}

// uids are the UIDs of the ConfigMaps of the works names, by ConfigMap name.
func (s *spokeWrites) uids(names []string) map[string]types.UID {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]types.UID{}
	for cm, o := range s.objs {
		if slices.Contains(names, workOfConfigMap(cm)) {
			out[cm] = o.uid
		}
	}
	return out
}

// createdBetween are the works of names whose every ConfigMap (five) was first created in [from, to).
func (s *spokeWrites) createdBetween(names []string, from, to time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	inside := map[string]int{}
	for cm, o := range s.objs {
		if w := workOfConfigMap(cm); slices.Contains(names, w) && !o.created.Before(from) && o.created.Before(to) {
			inside[w]++
		}
	}
	var out []string
	for w, n := range inside {
		if n == 5 {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	return out
}

// startInformers starts the factory's informers until the test ends and waits for their caches.
func startInformers(t testing.TB, factory interface {
	Start(<-chan struct{})
	WaitForCacheSync(<-chan struct{}) map[reflect.Type]bool
}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer of %v did not sync", typ)
		}
	}
}
