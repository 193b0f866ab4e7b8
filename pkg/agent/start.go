package agent

import (
	"context"
	"maps"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	workinformers "open-cluster-management.io/api/client/work/informers/externalversions"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/agent/feedback"
	"github.com/ferry-mc/ferry/pkg/agent/health"
	"github.com/ferry-mc/ferry/pkg/apply"
)

// Config is a resolved agent configuration: what Options turn into once flags and kubeconfigs are read.
type Config struct {
	// ClusterName is the managed cluster's name, the hub namespace of its ManifestWorks.
	ClusterName string
	// AgentID identifies this agent in AppliedManifestWorks.
	AgentID string
	// Clients reach the hub, with a credential for the cluster namespace, and the managed cluster.
	Clients Clients
	// Workers is the number of ManifestWorks reconciled at once.
	Workers int
	// StatusSyncInterval is how often a work is reconciled when nothing happens to it.
	StatusSyncInterval time.Duration
	// RecordNamespace is a namespace on the spoke where last-applied records too large for an
	// annotation are kept; empty: such manifests fail under Update with a clear message.
	RecordNamespace string
	// EvictionGracePeriod is how long an AppliedManifestWork of this agent that no hub delivers any
	// more stays before it is evicted; zero means DefaultEvictionGracePeriod.
	EvictionGracePeriod time.Duration
	// Feedback configures status feedback rules (JsonRaw values and their length).
	Feedback feedback.Options
	Log      logr.Logger
	// Ready, if set, is called once the caches are in sync and the workers run.
	Ready func()
	// ExecutorMode says how a work's spec.executor is held to its permissions: ExecutorCheck (the
	// default) or ExecutorImpersonate.
	ExecutorMode ExecutorMode
	// DefaultExecutor is the executor of works that name none; nil: they apply with the agent's rights.
	DefaultExecutor *workv1.ManifestWorkSubjectServiceAccount
	// SpokeEvents records Events on the spoke objects the agent acts on (events.go): drift put back,
	// apply failed, executor denied, deleted, evicted, orphaned. Off: no Event, and no broadcaster.
	SpokeEvents bool
}

// Start runs the agent until ctx is done.
func Start(ctx context.Context, cfg Config) error {
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	cl := cfg.Clients
	var err error
	mapper := newMappingCache(restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cl.SpokeDiscovery)))
	applier := apply.New(cl.SpokeDynamic, mapper)
	var records apply.RecordStore
	if cfg.RecordNamespace != "" {
		records = apply.NewSecretRecordStore(cl.SpokeKube, cfg.RecordNamespace)
		applier.WithRecordStore(records)
	}

	hubInformers := workinformers.NewSharedInformerFactoryWithOptions(cl.HubWorks, 0, workinformers.WithNamespace(cfg.ClusterName),
		workinformers.WithTransform(compactCached))
	spokeInformers := workinformers.NewSharedInformerFactoryWithOptions(cl.SpokeWorks, 0, workinformers.WithTransform(compactCached))
	works := hubInformers.Work().V1().ManifestWorks()
	amws := spokeInformers.Work().V1().AppliedManifestWorks()

	c := &controller{
		health:     health.New(),
		cluster:    cfg.ClusterName,
		hubHash:    HubHash(cl.HubHost),
		agentID:    cfg.AgentID,
		works:      cl.HubWorks.WorkV1().ManifestWorks(cfg.ClusterName),
		workLister: works.Lister().ManifestWorks(cfg.ClusterName),
		amws:       cl.SpokeWorks.WorkV1().AppliedManifestWorks(),
		amwLister:  amws.Lister(),
		dynamic:    cl.SpokeDynamic,
		mapper:     mapper,
		applier:    applier,
		feedback:   feedback.New(cfg.Feedback),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			// Conflicts and server errors back off from 100ms to a minute.
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "manifestworks"}),
		freshWorks: newWriteThroughCache[*workv1.ManifestWork](),
		freshAMWs:  newWriteThroughCache[*workv1.AppliedManifestWork](),
		settled:    newUnchangedApplyCache(),
		resync:     cfg.StatusSyncInterval,
		log:        cfg.Log,
	}
	if cfg.SpokeEvents {
		c.events = newSpokeEvents(cl.SpokeKube, cfg.Log)
		defer c.events.shutdown() // after the workers and eviction, which record them, have stopped
	}
	c.watches = newObjectWatches(ctx, cl.SpokeMetadata, c.enqueue)
	applier.WithExistenceHint(c.watches.exists)
	if c.executors, err = newExecutors(ctx, cfg, mapper, records, c.enqueueAfter); err != nil {
		return err
	}
	c.executors.hint = c.watches.exists
	if c.crds, err = newCRDTracker(cl.SpokeDynamic, mapper, c.enqueue); err != nil {
		return err
	}
	crdsDone := make(chan struct{})
	go func() { defer close(crdsDone); c.crds.run(ctx) }()
	defer func() { <-crdsDone }()

	if err := c.handleEvents(works.Informer(), amws.Informer()); err != nil {
		return err
	}
	hubInformers.Start(ctx.Done())
	spokeInformers.Start(ctx.Done())
	if !waitForCaches(ctx, hubInformers, spokeInformers, c.crds.hasSynced) {
		return nil // the caches fail to sync only when ctx is done: that is a stop, not an error
	}
	c.log.Info("work agent started", "cluster", cfg.ClusterName, "hub", cl.HubHost, "workers", cfg.Workers)
	if cfg.Ready != nil {
		cfg.Ready()
	}
	grace := cfg.EvictionGracePeriod
	if grace <= 0 {
		grace = DefaultEvictionGracePeriod
	}
	evicted := make(chan struct{})
	go func() {
		defer close(evicted)
		c.evictOrphans(ctx, grace, min(max(grace/4, 100*time.Millisecond), time.Minute))
	}()
	c.run(ctx, cfg.Workers)
	<-evicted
	hubInformers.Shutdown()
	spokeInformers.Shutdown()
	return nil
}

// handleEvents has the agent reconcile a work when the hub changes it (not when its status, ours,
// changes) and when its AppliedManifestWork is deleted, and feeds both caches' news to the agent's own
// write-through caches.
func (c *controller) handleEvents(works, amws cache.SharedIndexInformer) error {
	_, err := works.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if w, ok := obj.(*workv1.ManifestWork); ok {
				c.enqueue(w.Name)
			}
		},
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*workv1.ManifestWork)
			w, ok2 := cur.(*workv1.ManifestWork)
			if ok2 {
				c.freshWorks.caughtUp(w)
			}
			// Status writes (ours) change neither the generation, the labels (copied to the
			// AppliedManifestWork), whether the work is report-only (an annotation) nor the deletion
			// timestamp.
			if ok1 && ok2 && (o.Generation != w.Generation || !maps.Equal(o.Labels, w.Labels) || reportOnly(o) != reportOnly(w) ||
				(w.DeletionTimestamp != nil) != (o.DeletionTimestamp != nil)) {
				c.enqueue(w.Name)
			}
		},
	})
	if err != nil {
		return err
	}
	_, err = amws.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, cur any) {
			if a, ok := cur.(*workv1.AppliedManifestWork); ok {
				c.freshAMWs.caughtUp(a)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if a, ok := obj.(*workv1.AppliedManifestWork); ok && a.Spec.HubHash == c.hubHash {
				c.enqueue(a.Spec.ManifestWorkName)
			}
		},
	})
	return err
}

// waitForCaches waits until both informer factories and the CRD tracker have synced; false if ctx ended
// first.
func waitForCaches(ctx context.Context, hub, spoke workinformers.SharedInformerFactory, crdsSynced cache.InformerSynced) bool {
	for _, f := range []workinformers.SharedInformerFactory{hub, spoke} {
		for _, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return false
			}
		}
	}
	return cache.WaitForCacheSync(ctx.Done(), crdsSynced)
}
