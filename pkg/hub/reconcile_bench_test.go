package hub

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// The parts of an AppConfig's reconcile that go over its whole fleet, at 10,000 clusters. Every status
// report of the fleet's agents brings the AppConfig back (once per --report-batch): it is judged as it
// arrives and the summary is counted from the verdicts (workSummaries); TargetClusters and the check
// of every work run only when something but status changed (upToDateDeliveries).

// fleetOf is n clusters labelled fleet=yes, each with the reported, healthy ManifestWork of AppConfig
// default/web.
func fleetOf(n int) ([]*workv1.ManifestWork, []*clusterv1.ManagedCluster) {
	var works []*workv1.ManifestWork
	var clusters []*clusterv1.ManagedCluster
	for i := range n {
		name := fmt.Sprintf("c-%05d", i)
		works = append(works, reportedWork(name, v1alpha2.Healthy, 0))
		clusters = append(clusters, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"fleet": "yes"}}})
	}
	return works, clusters
}

// A report on one cluster of 10,000 and the summary after it; the first summary judges all 10,000.
func BenchmarkReportAndSummaryOf10000Clusters(b *testing.B) {
	works, _ := fleetOf(10000)
	current := map[string]bool{"Deployment/web": true}
	verdicts := newWorkSummaries(nil)
	for _, mw := range works {
		verdicts.observe(nil, mw)
	}
	verdicts.summarize(webApp, current, nil)
	healthy, degraded := works[5000], reportedWork(works[5000].Namespace, v1alpha2.Degraded, 40)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		old, report := healthy, degraded
		if i%2 == 1 {
			old, report = degraded, healthy
		}
		verdicts.observe(old, report)
		verdicts.summarize(webApp, current, nil)
	}
}

// Judging all 10,000 works of an AppConfig, as its first summary and every change of what it renders do.
func BenchmarkJudgeAll10000Clusters(b *testing.B) {
	works, _ := fleetOf(10000)
	verdicts := newWorkSummaries(nil)
	for _, mw := range works {
		verdicts.observe(nil, mw)
	}
	currents := []map[string]bool{{"Deployment/web": true}, {"Deployment/web": true, "Service/web": true}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		verdicts.summarize(webApp, currents[i%2], nil)
	}
}

func BenchmarkTargetClusters10000Clusters(b *testing.B) {
	_, clusters := fleetOf(10000)
	app := &v1alpha2.ApplicationConfiguration{}
	app.Spec.Placement = &v1alpha2.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": "yes"}}}
	lister := func(context.Context) ([]*clusterv1.ManagedCluster, error) { return clusters, nil }
	b.ReportAllocs()
	for b.Loop() {
		if _, err := TargetClusters(context.Background(), nil, lister, app); err != nil {
			b.Fatal(err)
		}
	}
}
