package hub

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/pkg/workreport"
)

// slimWork is the cache transform of ManifestWorks: the hub caches every work of its fleet (a hundred
// thousand for ten thousand clusters) and keeps of each only what it reads from the cache.
//
//   - its metadata, which deliver compares (labels, the spec hash) and an Update sends back, without
//     managedFields (an Update without them keeps the stored ones);
//   - its spec's manifestConfigs, not its manifests: deliver knows from the spec hash whether a work is
//     up to date, writes a whole new spec when it is not, and reads the stored work when it needs the
//     manifests (the earlier revisions a rollout keeps);
//   - of its status, its Complete condition's status and transition time (CompletedWorkReconciler), and
//     what clusterStatus, a rollout and the drift report read: the conditions they look at, each with
//     its type, status, generation and transition time, the messages a listed cluster shows (Applied
//     when not True, Progressing or Degraded when True), a manifest's Drifted condition with its
//     message (present only once its object drifted: a fleet that never drifts keeps nothing more),
//     the manifests' identities and their feedback;
//   - of a preview (a work annotated workreport.AnnotationReportDiff, which exists only while its
//     AppConfig is report only), its WouldChange conditions whole, the work's and its manifests': their
//     reason and message are the report status.diff and kubectl ferry read.
//
// A work the hub writes is decoded from the API server's answer, not from the cache, so what it writes
// is whole.
func slimWork(obj any) (any, error) {
	mw, ok := obj.(*workv1.ManifestWork)
	if !ok {
		return obj, nil // a deletion tombstone: passed on as it is
	}
	mw.ManagedFields = nil
	mw.Spec.Workload.Manifests = nil
	// Complete with the time it turned True: the completed-work cleanup counts its TTL from it.
	var complete *metav1.Condition
	if c := workreport.Complete(mw.Status.Conditions); c != nil {
		complete = &metav1.Condition{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime}
	}
	previews := mw.Annotations[workreport.AnnotationReportDiff] == "true"
	wouldChange := keptWhole(previews, mw.Status.Conditions)
	mw.Status.Conditions = append(slimConditions(mw.Status.Conditions, workreport.WorkConditionTypes, nil), wouldChange...)
	if complete != nil {
		mw.Status.Conditions = append(mw.Status.Conditions, *complete)
	}
	for i := range mw.Status.ResourceStatus.Manifests {
		m := &mw.Status.ResourceStatus.Manifests[i]
		wouldChange := keptWhole(previews, m.Conditions)
		m.Conditions = append(slimConditions(m.Conditions, workreport.ManifestConditionTypesRead, workreport.MessageRead), wouldChange...)
	}
	return mw, nil
}

// keptWhole are the WouldChange conditions of a preview's conds, copied before slimConditions drops
// them; none of any other work.
func keptWhole(preview bool, conds []metav1.Condition) []metav1.Condition {
	if !preview {
		return nil
	}
	var out []metav1.Condition
	for _, c := range conds {
		if c.Type == workreport.ConditionWouldChange {
			out = append(out, c)
		}
	}
	return out
}

// slimConditions keeps the conditions of the types read, each without its reason and (unless
// showMessage says otherwise) message. The transition time stays: it takes no memory of its own, and a
// rollout's soak counts from it.
func slimConditions(conds []metav1.Condition, read []string, showMessage func(metav1.Condition) bool) []metav1.Condition {
	conds = slices.DeleteFunc(conds, func(c metav1.Condition) bool { return !slices.Contains(read, c.Type) })
	for i := range conds {
		c := &conds[i]
		c.Reason = ""
		if showMessage == nil || !showMessage(*c) {
			c.Message = ""
		}
	}
	if len(conds) < cap(conds) {
		conds = slices.Clone(conds) // the dropped ones' room is given back
	}
	return conds
}

// cachedObjects reads one kind of object straight from the hub cache's informer: the cache's own
// objects, read only. A client's List copies every object it returns into the list's Items; at
// 10,000 clusters each reconcile of an AppConfig copied its 10,000 works and the 10,000
// ManagedClusters, which was most of the hub's memory beyond the cache itself.
type cachedObjects[T client.Object] struct {
	indexer toolscache.Indexer
}

// cachedObjectsOf is the informer of obj's kind in c, with indexers added (before the cache starts).
// It needs the informer cache a controller-runtime manager has; any other cache is an error.
func cachedObjectsOf[T client.Object](ctx context.Context, c cache.Cache, obj T, indexers toolscache.Indexers) (cachedObjects[T], error) {
	inf, err := c.GetInformer(ctx, obj)
	if err != nil {
		return cachedObjects[T]{}, fmt.Errorf("informer of %T: %w", obj, err)
	}
	if len(indexers) > 0 {
		if err := inf.AddIndexers(indexers); err != nil {
			return cachedObjects[T]{}, fmt.Errorf("index %T: %w", obj, err)
		}
	}
	withIndexer, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return cachedObjects[T]{}, fmt.Errorf("the cache's informer of %T (%T) has no indexer to read", obj, inf)
	}
	return cachedObjects[T]{indexer: withIndexer.GetIndexer()}, nil
}

// byIndex returns the objects the index holds under key.
func (c cachedObjects[T]) byIndex(index, key string) ([]T, error) {
	objs, err := c.indexer.ByIndex(index, key)
	if err != nil {
		return nil, err
	}
	return typed[T](objs)
}

// all returns every cached object.
func (c cachedObjects[T]) all() ([]T, error) {
	return typed[T](c.indexer.List())
}

func typed[T client.Object](objs []any) ([]T, error) {
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		t, ok := o.(T)
		if !ok {
			return nil, fmt.Errorf("cache holds a %T where a %T was expected", o, t)
		}
		out = append(out, t)
	}
	return out, nil
}
