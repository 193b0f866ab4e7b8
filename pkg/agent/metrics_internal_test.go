package agent

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	worklisters "open-cluster-management.io/api/client/work/listers/work/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// The works gauge reads a work's conditions as the hub and kubectl ferry do: a verdict on an earlier
// generation of the work (its spec changed since) says nothing about the current one, and counts as
// Unknown.
func TestWorksGaugeCountsOnlyVerdictsOnTheCurrentGeneration(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	work := func(name string, gen, reportedGen int64) *workv1.ManifestWork {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "c1", Generation: gen}}
		for _, typ := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
			w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, ObservedGeneration: reportedGen})
		}
		return w
	}
	for _, w := range []*workv1.ManifestWork{work("current", 2, 2), work("changed-since", 3, 2)} {
		if err := indexer.Add(w); err != nil {
			t.Fatal(err)
		}
	}
	stop := reportWorks(worklisters.NewManifestWorkLister(indexer).ManifestWorks("c1"))
	defer stop()

	ch := make(chan prometheus.Metric, 16)
	worksGauge.Collect(ch)
	close(ch)
	got := map[string]float64{}
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		labels := map[string]string{}
		for _, l := range d.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		got[labels["condition"]+"/"+labels["status"]] += d.GetGauge().GetValue()
	}
	for _, typ := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
		if got[typ+"/True"] != 1 || got[typ+"/Unknown"] != 1 {
			t.Errorf("%s: %v True, %v Unknown; want 1 and 1 (the work changed since its report is Unknown)", typ, got[typ+"/True"], got[typ+"/Unknown"])
		}
	}
}
