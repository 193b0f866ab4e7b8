package statusview

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
)

// appConfig is an AppConfig at generation gen whose hub rendered the Deployment hello/web, with a Ready
// condition of status ready about readyGen.
func appConfig(gen, readyGen int64, ready metav1.ConditionStatus, message string) *v1alpha2.ApplicationConfiguration {
	return &v1alpha2.ApplicationConfiguration{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello-app", Generation: gen},
		Status: v1alpha2.ApplicationConfigurationStatus{
			Conditions: []metav1.Condition{cond(hub.ConditionReady, ready, readyGen, "Delivered", message)},
			Workloads: []v1alpha2.WorkloadStatus{{ComponentName: "web",
				Reference: v1alpha2.TypedReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}},
		},
	}
}

func TestForAppConfig(t *testing.T) {
	healthyWork := func(t *testing.T, cluster string) workv1.ManifestWork {
		return *reported(work(t, cluster, 1, deployment), healthyReport(deployment, 0, 1))
	}
	progressingWork := func(t *testing.T, cluster string) workv1.ManifestWork {
		return *reported(work(t, cluster, 1, deployment), with(healthyReport(deployment, 0, 1),
			cond(workv1.ManifestProgressing, T, 1, "ResourceInProgress", "Available: 0/2")))
	}
	for _, tc := range []struct {
		name         string
		app          *v1alpha2.ApplicationConfiguration
		works        func(t *testing.T) []workv1.ManifestWork
		wantClusters []string
		wantReady    metav1.ConditionStatus
		wantHealthy  bool
		wantProblems []string // substrings, in order
	}{{
		name: "Ready and healthy everywhere; clusters in name order",
		app:  appConfig(2, 2, T, "delivered to 2 clusters"),
		works: func(t *testing.T) []workv1.ManifestWork {
			return []workv1.ManifestWork{healthyWork(t, "cluster2"), healthyWork(t, "cluster1")}
		},
		wantClusters: []string{"cluster1", "cluster2"},
		wantReady:    T, wantHealthy: true,
	}, {
		name: "one cluster still progressing",
		app:  appConfig(1, 1, T, ""),
		works: func(t *testing.T) []workv1.ManifestWork {
			return []workv1.ManifestWork{healthyWork(t, "cluster1"), progressingWork(t, "cluster2")}
		},
		wantClusters: []string{"cluster1", "cluster2"},
		wantReady:    T,
		wantProblems: []string{"cluster2: Deployment hello/web (applied True, available True, health Progressing: ResourceInProgress: Available: 0/2)"},
	}, {
		name:         "a Ready condition about an older generation: the hub has not rendered the change yet",
		app:          appConfig(3, 2, T, ""),
		works:        func(t *testing.T) []workv1.ManifestWork { return []workv1.ManifestWork{healthyWork(t, "cluster1")} },
		wantClusters: []string{"cluster1"},
		wantReady:    U,
		wantProblems: []string{"is not Ready (Unknown): the hub has not rendered generation 3"},
	}, {
		name:         "not delivered: Ready False with the hub's message",
		app:          appConfig(1, 1, F, "component web has no revision recorded yet"),
		works:        func(t *testing.T) []workv1.ManifestWork { return nil },
		wantClusters: nil,
		wantReady:    F,
		wantProblems: []string{"is not Ready (False): component web has no revision", "is delivered to no cluster"},
	}, {
		name: "a workload of an earlier revision is listed but not counted",
		app:  appConfig(1, 1, T, ""),
		works: func(t *testing.T) []workv1.ManifestWork {
			earlier := object{"apps/v1", "Deployment", "hello", "web-v1"}
			mw := reported(work(t, "cluster1", 1, deployment, earlier), healthyReport(deployment, 0, 1),
				with(healthyReport(earlier, 1, 1), cond(workv1.ManifestAvailable, F, 1, "ResourceNotAvailable", "")))
			return []workv1.ManifestWork{*mw}
		},
		wantClusters: []string{"cluster1"},
		wantReady:    T, wantHealthy: true,
	}, {
		name: "a work that holds only an earlier revision (not updated yet) is not healthy",
		app:  appConfig(1, 1, T, ""),
		works: func(t *testing.T) []workv1.ManifestWork {
			earlier := object{"apps/v1", "Deployment", "hello", "web-v1"}
			return []workv1.ManifestWork{*reported(work(t, "cluster1", 1, earlier), healthyReport(earlier, 0, 1))}
		},
		wantClusters: []string{"cluster1"},
		wantReady:    T,
		wantProblems: []string{"cluster1: none of the work's manifests is of the AppConfig's current revision"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := ForAppConfig(tc.app, tc.works(t))
			var clusters []string
			for _, c := range got.Clusters {
				clusters = append(clusters, c.Cluster)
			}
			if strings.Join(clusters, ",") != strings.Join(tc.wantClusters, ",") {
				t.Errorf("clusters %q, want %q", clusters, tc.wantClusters)
			}
			if got.Ready != tc.wantReady || got.Healthy != tc.wantHealthy {
				t.Errorf("ready %s, healthy %t; want %s, %t", got.Ready, got.Healthy, tc.wantReady, tc.wantHealthy)
			}
			problems := got.Problems()
			if len(problems) != len(tc.wantProblems) {
				t.Fatalf("problems %q, want %d like %q", problems, len(tc.wantProblems), tc.wantProblems)
			}
			for i, want := range tc.wantProblems {
				if !strings.Contains(problems[i], want) {
					t.Errorf("problem %d is %q, want it to say %q", i, problems[i], want)
				}
			}
		})
	}
}

func TestForAppConfigMarksEarlierRevisions(t *testing.T) {
	earlier := object{"apps/v1", "Deployment", "hello", "web-v1"}
	mw := reported(work(t, "cluster1", 1, deployment, earlier), healthyReport(deployment, 0, 1), healthyReport(earlier, 1, 1))
	got := ForAppConfig(appConfig(1, 1, T, ""), []workv1.ManifestWork{*mw}).Clusters[0].Manifests
	if got[0].EarlierRevision || !got[1].EarlierRevision {
		t.Errorf("earlierRevision of web, web-v1: %t, %t; want false, true", got[0].EarlierRevision, got[1].EarlierRevision)
	}
	if got[1].Reason != ReasonEarlierRevision {
		t.Errorf("reason of web-v1 %q, want %q so that a person sees why it is not counted", got[1].Reason, ReasonEarlierRevision)
	}
}
