package fleetsim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// Summary is an AppConfig's status summary as numbers: of Clusters target clusters, how many are
// applied, available and healthy.
type Summary struct {
	Clusters, Applied, Available, Healthy int
	// ObservedGeneration is the AppConfig generation the hub's status describes.
	ObservedGeneration int64
}

// RolloutState is where an AppConfig's rollout (status.rollout) stands; zero without spec.rollout.
type RolloutState struct {
	// Revision is the revision rolling out; StableRevision the one before it.
	Revision, StableRevision string
	Phase                    v1alpha2.RolloutPhase
	// Stage is the stage in progress.
	Stage string
	// Updated counts the clusters, of every stage, that carry Revision; Failed those that failed.
	Updated, Failed int
	// Halted: the AppConfig's RolloutHalted condition is True.
	Halted bool
}

// Observation is a summary and a rollout state, and when they were first seen.
type Observation struct {
	At time.Time
	Summary
	Rollout RolloutState
}

// AppConfigWatcher watches the AppConfigs of a namespace, or of every namespace, and records every
// change of their summaries and rollouts with the time it arrived: what a person watching `kubectl get
// appconfigs` sees, and when. It tells AppConfigs apart by name: watching every namespace, their names
// must differ (Err reports one name seen in two namespaces).
type AppConfigWatcher struct {
	informer cache.SharedIndexInformer

	mu      sync.Mutex
	history map[string][]Observation
	// namespaces is where each AppConfig name was seen first.
	namespaces map[string]string
	badErr     error
}

// summarized is an AppConfig as the watcher's informer keeps it: its name, summary and rollout.
type summarized struct {
	metav1.ObjectMeta
	summary Summary
	rollout RolloutState
	err     error
}

// NewAppConfigWatcher returns a watcher of the AppConfigs in namespace (metav1.NamespaceAll: in every
// namespace) that c (whose scheme knows v1alpha2) reaches. Start starts it.
func NewAppConfigWatcher(c client.WithWatch, namespace string) (*AppConfigWatcher, error) {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := &v1alpha2.ApplicationConfigurationList{}
			return list, c.List(ctx, list, client.InNamespace(namespace), &client.ListOptions{Raw: &opts})
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, &v1alpha2.ApplicationConfigurationList{}, client.InNamespace(namespace), &client.ListOptions{Raw: &opts})
		},
	}
	w := &AppConfigWatcher{history: map[string][]Observation{}, namespaces: map[string]string{}}
	w.informer = cache.NewSharedIndexInformer(lw, &v1alpha2.ApplicationConfiguration{}, 0, cache.Indexers{})
	// The summary and the rollout are all the watcher reads; the rest of the status is not kept.
	if err := w.informer.SetTransform(summarize); err != nil {
		return nil, fmt.Errorf("AppConfig watcher: %w", err)
	}
	_, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.record(obj) },
		UpdateFunc: func(_, obj any) { w.record(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("AppConfig watcher: %w", err)
	}
	return w, nil
}

// Start runs the watcher until ctx is done and returns once it has seen every AppConfig that exists
// now.
func (w *AppConfigWatcher) Start(ctx context.Context) error {
	go w.informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), w.informer.HasSynced) {
		return fmt.Errorf("AppConfig watcher: the first list did not finish: %w", context.Cause(ctx))
	}
	return nil
}

func summarize(obj any) (any, error) {
	app, ok := obj.(*v1alpha2.ApplicationConfiguration)
	if !ok {
		return obj, nil
	}
	s := &summarized{ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace, ResourceVersion: app.ResourceVersion}}
	s.summary.ObservedGeneration = app.Status.ObservedGeneration
	if sum := app.Status.Summary; sum != nil {
		s.summary.Clusters = int(sum.Clusters)
		s.summary.Applied, s.err = readyCount(sum.Applied, s.err)
		s.summary.Available, s.err = readyCount(sum.Available, s.err)
		s.summary.Healthy, s.err = readyCount(sum.Healthy, s.err)
	}
	if s.err != nil {
		s.err = fmt.Errorf("AppConfig %s/%s: %w", app.Namespace, app.Name, s.err)
	}
	if ro := app.Status.Rollout; ro != nil {
		s.rollout = RolloutState{Revision: ro.Revision, StableRevision: ro.StableRevision, Phase: ro.Phase, Stage: ro.Stage,
			Halted: meta.IsStatusConditionTrue(app.Status.Conditions, v1alpha2.ConditionRolloutHalted)}
		for _, st := range ro.Stages {
			s.rollout.Updated += int(st.Updated)
			s.rollout.Failed += int(st.Failed)
		}
	}
	return s, nil
}

// readyCount reads the <ready> of a summary's "<ready>/<total>"; an empty one (not reported) is 0.
func readyCount(s string, prev error) (int, error) {
	if s == "" || prev != nil {
		return 0, prev
	}
	ready, _, _ := strings.Cut(s, "/")
	n, err := strconv.Atoi(ready)
	if err != nil {
		return 0, fmt.Errorf("summary count %q: want <ready>/<total>", s)
	}
	return n, nil
}

func (w *AppConfigWatcher) record(obj any) {
	s, ok := obj.(*summarized)
	if !ok {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if s.err != nil && w.badErr == nil {
		w.badErr = s.err
	}
	if ns, ok := w.namespaces[s.Name]; !ok {
		w.namespaces[s.Name] = s.Namespace
	} else if ns != s.Namespace {
		if w.badErr == nil {
			w.badErr = fmt.Errorf("AppConfig %s in namespaces %s and %s: the watcher tells AppConfigs apart by name", s.Name, ns, s.Namespace)
		}
		return
	}
	h := w.history[s.Name]
	if len(h) > 0 && h[len(h)-1].Summary == s.summary && h[len(h)-1].Rollout == s.rollout {
		return
	}
	w.history[s.Name] = append(h, Observation{At: now, Summary: s.summary, Rollout: s.rollout})
}

// Latest is the AppConfig's summary and rollout as last seen, if the AppConfig was seen.
func (w *AppConfigWatcher) Latest(name string) (Observation, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.history[name]
	if len(h) == 0 {
		return Observation{}, false
	}
	return h[len(h)-1], true
}

// History is every summary and rollout state the AppConfig has had, in the order they were seen.
func (w *AppConfigWatcher) History(name string) []Observation {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.history[name])
}

// Names are the AppConfigs seen, sorted.
func (w *AppConfigWatcher) Names() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.history))
}

// Err is the first summary the watcher could not read, if any.
func (w *AppConfigWatcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.badErr
}
