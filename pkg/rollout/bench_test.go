package rollout

import (
	"fmt"
	"testing"
	"time"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// BenchmarkDecide10000 decides for 10,000 clusters, midway through the second of three stages (1 %,
// 10 %, the rest): the hub decides again on every batch of reports of a rolling AppConfig.
func BenchmarkDecide10000(b *testing.B) {
	const n = 10000
	clusters := make([]Cluster, n)
	for i := range clusters {
		clusters[i] = Cluster{Name: fmt.Sprintf("cluster-%05d", i), Reachable: true, Revision: "r1", UpdatedAt: t0.Add(-time.Hour),
			Reported: true, Health: v1alpha2.Healthy, HealthySince: t0.Add(-time.Hour)}
		if i < 600 { // the first stage and half the second carry r2
			clusters[i].Revision, clusters[i].UpdatedAt, clusters[i].HealthySince = "r2", t0.Add(-3*time.Minute), t0.Add(-2*time.Minute)
		}
	}
	spec := v1alpha2.Rollout{
		Stages:        []v1alpha2.RolloutStage{{Name: "one", Size: pct("1%")}, {Name: "ten", Size: pct("10%")}},
		RolloutConfig: v1alpha2.RolloutConfig{MaxConcurrency: pct("50%"), MinSuccessTime: dur(time.Minute)},
	}
	in := Input{Spec: spec, Revision: "r2", Stable: "r1", Clusters: clusters, Now: t0}
	b.ReportAllocs()
	for b.Loop() {
		d, err := Decide(in)
		if err != nil {
			b.Fatal(err)
		}
		if d.Phase != v1alpha2.RolloutProgressing || d.Stage != "ten" {
			b.Fatalf("phase %s stage %s, want Progressing in stage ten", d.Phase, d.Stage)
		}
	}
}
