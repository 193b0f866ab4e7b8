package agent

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	worklisters "open-cluster-management.io/api/client/work/listers/work/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	// Its package initialization makes client-go's named workqueues report controller-runtime's
	// workqueue metrics on ctrlmetrics.Registry (pkg/internal/metrics), as in every controller-runtime
	// controller; the agent's queue is a plain client-go one.
	_ "sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"

	"github.com/ferry-mc/ferry/pkg/apply"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// The agent's Prometheus metrics. They live on controller-runtime's registry (ctrlmetrics.Registry), as
// the hub's do, which is what the agent serves on --metrics-bind-address: beside them, controller-runtime
// registers there the workqueue metrics of every named client-go queue (workqueue_depth and the rest,
// under the names and labels dashboards for kubebuilder controllers know), the client-go request
// metrics (rest_client_requests_total, ...) and the leader election's (leader_election_master_status).

// Outcomes of one manifest's apply: a small fixed set, so that the counter's series stay few whatever
// the works hold. They follow the manifest's Applied condition, so that the metric and the status a
// person reads on the hub never disagree.
const (
	outcomeApplied   = "applied"   // written: created or updated
	outcomeUnchanged = "unchanged" // nothing written: the object matched, or exists under CreateOnly or ReadOnly
	outcomeSkipped   = "skipped"   // nothing written by the strategy's choice: apply-once leaves the cluster's object be
	outcomeConflict  = "conflict"  // another field manager or another ManifestWork holds the object
	outcomeWaiting   = "waiting"   // held back until its CustomResourceDefinition is served
	outcomeFailed    = "failed"    // Applied=False for any other reason
)

// strategyUnknown labels manifests that no valid strategy was chosen for: their kind is not served
// (yet), the manifest does not decode, or its strategy type is not one the agent knows. Using the
// user's string there would let a typo create series.
const strategyUnknown = "unknown"

var (
	manifestApplies = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ferry_agent_manifest_applies_total",
		Help: "Manifests the agent processed in a reconcile of their ManifestWork, by update strategy and outcome.",
	}, []string{"strategy", "outcome"})

	manifestApplyDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "ferry_agent_manifest_apply_duration_seconds",
		Help: "How long applying one manifest to the managed cluster took, by update strategy.",
		// 1ms to about 16s: one or two requests to the managed cluster's API server, fast or struggling.
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"strategy"})

	driftReverted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ferry_agent_drift_reverted_total",
		Help: "Objects found changed on the managed cluster in fields their ManifestWork sets and put back, by kind and by the field manager that changed them (\"unknown\" when the object does not say).",
	}, []string{"kind", "manager"})

	settledApplies = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ferry_agent_manifest_applies_settled_total",
		Help: "Manifest applies answered without a request: the object's watch showed it unchanged since an apply that found nothing to write.",
	})

	worksGauge = &worksCollector{
		desc: prometheus.NewDesc("ferry_agent_works",
			"ManifestWorks of this managed cluster by the status of their Applied and Available conditions; "+
				"a work without the condition yet counts as Unknown.",
			[]string{"condition", "status"}, nil),
		listers: map[*worklisters.ManifestWorkNamespaceLister]struct{}{},
	}
)

func init() {
	ctrlmetrics.Registry.MustRegister(manifestApplies, manifestApplyDuration, driftReverted, settledApplies, worksGauge)
}

// strategyLabel bounds a strategy type to the ones the apply engine implements.
func strategyLabel(s apply.StrategyType) string {
	switch s {
	case apply.Update, apply.CreateOnly, apply.ServerSideApply, apply.ReadOnly, apply.ApplyOnce, apply.ApplyOnceForce:
		return string(s)
	}
	return strategyUnknown
}

// observeApplyDuration records how long one manifest's apply took.
func observeApplyDuration(s apply.StrategyType, took time.Duration) {
	manifestApplyDuration.WithLabelValues(strategyLabel(s)).Observe(took.Seconds())
}

// countApply counts one manifest's result of a reconcile. An apply cut short because the agent stops
// is not counted: it says nothing about the manifest, and would show every shutdown as failures.
func countApply(r *manifestResult) {
	if errors.Is(r.err, context.Canceled) {
		return
	}
	strategy := strategyUnknown
	if r.meta.Resource != "" { // the kind was mapped, so the strategy was chosen
		s := optionsFor(r.config).Strategy
		if r.reportOnly {
			s = apply.ReadOnly // what was done, whatever the manifest says
		}
		strategy = strategyLabel(s)
	}
	manifestApplies.WithLabelValues(strategy, applyOutcome(r)).Inc()
	if d := r.result.Drift; d != nil && r.err == nil {
		manager := "unknown"
		if len(d.Managers) > 0 {
			manager = d.Managers[0]
		}
		driftReverted.WithLabelValues(r.meta.Kind, manager).Inc()
	}
}

// applyOutcome classifies a manifest's result the way its Applied condition does.
func applyOutcome(r *manifestResult) string {
	applied := appliedCondition(r)
	switch {
	case applied.Status == metav1.ConditionUnknown:
		return outcomeWaiting
	case applied.Reason == ReasonApplyConflict || applied.Reason == ReasonObjectOwnedByAnotherWork:
		return outcomeConflict
	case applied.Status == metav1.ConditionFalse:
		return outcomeFailed
	}
	switch r.result.Operation {
	case apply.Created, apply.Updated:
		return outcomeApplied
	case apply.Unchanged:
		return outcomeUnchanged
	}
	return outcomeSkipped
}

// reportWorks makes the works gauge count the ManifestWorks lister holds until the returned function
// is called. A controller calls it while it runs: the count then comes from the same informer cache
// the controller works from, costs nothing until scraped, and cannot drift from it. An agent that
// stands by for the Lease has no running controller and reports no works rather than zero.
func reportWorks(lister worklisters.ManifestWorkNamespaceLister) (stop func()) {
	key := &lister
	worksGauge.mu.Lock()
	worksGauge.listers[key] = struct{}{}
	worksGauge.mu.Unlock()
	return func() {
		worksGauge.mu.Lock()
		delete(worksGauge.listers, key)
		worksGauge.mu.Unlock()
	}
}

// worksCollector counts ManifestWorks by condition at scrape time.
type worksCollector struct {
	desc *prometheus.Desc

	mu sync.Mutex
	// the listers of the running controllers, each under a key of its own report, so that a stop removes
	// only what its report added
	listers map[*worklisters.ManifestWorkNamespaceLister]struct{}
}

// worksConditions and worksStatuses are the label values the gauge always reports, zeros included, so
// that a dashboard shows 0 rather than no data.
var (
	worksConditions = workreport.WorkConditionTypes
	worksStatuses   = []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}
)

func (w *worksCollector) Describe(ch chan<- *prometheus.Desc) { ch <- w.desc }

func (w *worksCollector) Collect(ch chan<- prometheus.Metric) {
	w.mu.Lock()
	listers := make([]worklisters.ManifestWorkNamespaceLister, 0, len(w.listers))
	for l := range w.listers {
		listers = append(listers, *l)
	}
	w.mu.Unlock()
	if len(listers) == 0 {
		return
	}
	type series struct {
		condition string
		status    metav1.ConditionStatus
	}
	counts := map[series]int{}
	for _, l := range listers {
		all, err := l.List(labels.Everything())
		if err != nil {
			// A cache lister does not fail; were it to, no sample beats a wrong count.
			return
		}
		for _, work := range all {
			for _, typ := range worksConditions {
				// As the hub and kubectl ferry read it: a verdict on an earlier generation is Unknown.
				counts[series{typ, workreport.WorkStatus(work.Status.Conditions, typ, work.Generation)}]++
			}
		}
	}
	for _, typ := range worksConditions {
		for _, status := range worksStatuses {
			ch <- prometheus.MustNewConstMetric(w.desc, prometheus.GaugeValue, float64(counts[series{typ, status}]), typ, string(status))
		}
	}
}
