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
// report of the fleet's agents brings the AppConfig back (once per --report-batch): summarize runs each
// time; TargetClusters and the check of every work only when something but status changed
// (deliveryChecks).

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

func BenchmarkSummarize10000Clusters(b *testing.B) {
	works, _ := fleetOf(10000)
	current := map[string]bool{"Deployment/web": true}
	b.ReportAllocs()
	for b.Loop() {
		summarize(works, current)
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
