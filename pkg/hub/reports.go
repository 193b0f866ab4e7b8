package hub

import (
	"context"
	"maps"
	"slices"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// DefaultReportBatch is how long the hub gathers agents' status reports of one AppConfig's
// ManifestWorks before it reconciles the AppConfig for them.
const DefaultReportBatch = 500 * time.Millisecond

// batchedReports enqueues the AppConfigs of ManifestWork events (appConfigsOf), an agent's status
// report reportBatch later and everything else at once. A fleet's agents report all the time: at
// 10,000 clusters each AppConfig would otherwise be reconciled back to back — every one of its works
// checked, its status summarized and written — for each report, while one reconcile a second takes in
// every report of that second. The queue keeps an AppConfig's earliest time, so a stream of reports
// never puts it off by more than reportBatch; a change of a work's spec, labels or deletion (the hub's
// own writes, a person's edits, a deletion) is not batched: delivery reacts to it at once.
type batchedReports struct {
	appConfigsOf handler.MapFunc
	reportBatch  time.Duration
	// changed, when set, is called for every event but a status report, before its AppConfigs are
	// enqueued (see upToDateDeliveries).
	changed func()
	// observe, when set, is given every work created (old nil), updated or deleted (updated nil)
	// before its AppConfigs are enqueued (see workSummaries).
	observe func(old, updated client.Object)
}

var _ handler.EventHandler = batchedReports{}

func (b batchedReports) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	b.notifyObserved(nil, e.Object)
	b.notifyChanged()
	b.add(ctx, e.Object, q, 0)
}

func (b batchedReports) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	b.notifyObserved(e.ObjectOld, e.ObjectNew)
	sameLabels := maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
	var after time.Duration
	if sameLabels && onlyStatusChanged(e.ObjectOld, e.ObjectNew) {
		after = b.reportBatch
	} else {
		b.notifyChanged()
	}
	b.add(ctx, e.ObjectNew, q, after)
	if !sameLabels {
		b.add(ctx, e.ObjectOld, q, 0) // relabelled away from an AppConfig: that one looks again too
	}
}

func (b batchedReports) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	b.notifyObserved(e.Object, nil)
	b.notifyChanged()
	b.add(ctx, e.Object, q, 0)
}

func (b batchedReports) Generic(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	b.notifyChanged()
	b.add(ctx, e.Object, q, 0)
}

func (b batchedReports) notifyObserved(old, updated client.Object) {
	if b.observe != nil {
		b.observe(old, updated)
	}
}

func (b batchedReports) notifyChanged() {
	if b.changed != nil {
		b.changed()
	}
}

func (b batchedReports) add(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request], after time.Duration) {
	for _, req := range b.appConfigsOf(ctx, o) {
		if after > 0 {
			q.AddAfter(req, after)
		} else {
			q.Add(req)
		}
	}
}

// appConfigChanged passes every event of an AppConfig but an update of its status alone, which
// statusWritten takes instead. Nearly all of those are the hub's own writes of the summary, and each
// brought the AppConfig straight back: while a fleet reported, every status write started a reconcile
// that folded in the reports of the write's round trip and wrote again, so the summary was rewritten at
// the pace of the API server's answers — three or four times a second per AppConfig, past reportBatch —
// loading the API server the agents report to. A spec, label, annotation (kubectl ferry rollout undo),
// finalizer or deletion change passes at once.
var appConfigChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool { return !onlyStatusWritten(e) }}

// statusWritten brings an AppConfig back after an update of its status alone, reportBatch later, as an
// agent's report: what the hub computes of a status someone else wrote (a person, another controller)
// is put back at the pace of the reports. The hub's own writes are patched from the status it last
// wrote (writtenStatuses), so the reconcile one of them brings writes only what reports changed
// meanwhile; batched, it costs at most one write per reportBatch, the pace of the reports themselves.
func statusWritten(reportBatch time.Duration) handler.Funcs {
	return handler.Funcs{UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if onlyStatusWritten(e) {
			q.AddAfter(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.ObjectNew)}, reportBatch)
		}
	}}
}

// onlyStatusWritten reports whether an update of an AppConfig left its spec and metadata as they were.
func onlyStatusWritten(e event.UpdateEvent) bool {
	return onlyStatusChanged(e.ObjectOld, e.ObjectNew) &&
		maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) &&
		slices.Equal(e.ObjectOld.GetFinalizers(), e.ObjectNew.GetFinalizers())
}

// onlyStatusChanged reports whether an update of a ManifestWork whose labels stayed as they were
// left its spec (generation), annotations and deletion as they were too: an agent's status report.
// It runs on every report (about 100 a second across a fleet), hence maps.Equal, not reflection.
func onlyStatusChanged(old, updated client.Object) bool {
	return old.GetGeneration() == updated.GetGeneration() &&
		(old.GetDeletionTimestamp() == nil) == (updated.GetDeletionTimestamp() == nil) &&
		maps.Equal(old.GetAnnotations(), updated.GetAnnotations())
}
