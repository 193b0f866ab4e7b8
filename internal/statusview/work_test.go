package statusview

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// row is the part of a manifest's view a case pins.
type manifestRow struct {
	Kind, Name, Strategy string
	Applied, Available   metav1.ConditionStatus
	Health               v1alpha2.Health
	Reason               string
}

func rowsOf(w Work) []manifestRow {
	var out []manifestRow
	for _, m := range w.Manifests {
		out = append(out, manifestRow{m.Kind, namespacedName(m.Namespace, m.Name), m.Strategy, m.Applied, m.Available, m.Health, m.Reason})
	}
	return out
}

// checkRows fails t unless got equals want, showing both in full.
func checkRows(t *testing.T, got, want []manifestRow) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	format := func(rows []manifestRow) string {
		var b strings.Builder
		for _, r := range rows {
			fmt.Fprintf(&b, "\t%+v\n", r)
		}
		return b.String()
	}
	t.Errorf("rows:\n%swant:\n%s", format(got), format(want))
}

const (
	T = metav1.ConditionTrue
	F = metav1.ConditionFalse
	U = metav1.ConditionUnknown
)

func TestForWork(t *testing.T) {
	for _, tc := range []struct {
		name        string
		work        func(t *testing.T) *workv1.ManifestWork
		want        []manifestRow
		wantHealth  v1alpha2.Health
		wantHealthy bool
	}{{
		name: "every manifest applied, available and healthy; strategies from manifestConfigs, Update by default",
		work: func(t *testing.T) *workv1.ManifestWork {
			mw := reported(work(t, "cluster1", 2, namespace, configMap, deployment),
				healthyReport(namespace, 0, 2), healthyReport(configMap, 1, 2), healthyReport(deployment, 2, 2))
			mw.Spec.ManifestConfigs = []workv1.ManifestConfigOption{strategy(deployment, workv1.UpdateStrategyTypeServerSideApply), strategy(configMap, "ApplyOnce")}
			return mw
		},
		want: []manifestRow{
			{"Namespace", "hello", "Update", T, T, v1alpha2.Healthy, ""},
			{"ConfigMap", "hello/greeting", "ApplyOnce", T, T, v1alpha2.Healthy, ""},
			{"Deployment", "hello/web", "ServerSideApply", T, T, v1alpha2.Healthy, ""},
		},
		wantHealth: v1alpha2.Healthy, wantHealthy: true,
	}, {
		name: "the agent has not reported yet: every manifest Unknown, not healthy",
		work: func(t *testing.T) *workv1.ManifestWork { return work(t, "cluster1", 1, configMap, deployment) },
		want: []manifestRow{
			{"ConfigMap", "hello/greeting", "Update", U, U, v1alpha2.HealthUnknown, ReasonNotReported},
			{"Deployment", "hello/web", "Update", U, U, v1alpha2.HealthUnknown, ReasonNotReported},
		},
		wantHealth: v1alpha2.HealthUnknown,
	}, {
		name: "a report about an older generation of the work does not count",
		work: func(t *testing.T) *workv1.ManifestWork {
			return reported(work(t, "cluster1", 3, configMap), healthyReport(configMap, 0, 2))
		},
		want:       []manifestRow{{"ConfigMap", "hello/greeting", "Update", U, U, v1alpha2.HealthUnknown, ReasonNotReported}},
		wantHealth: v1alpha2.HealthUnknown,
	}, {
		name: "a report of another object at the same ordinal (the spec changed) does not count",
		work: func(t *testing.T) *workv1.ManifestWork {
			return reported(work(t, "cluster1", 1, deployment), healthyReport(configMap, 0, 1))
		},
		want:       []manifestRow{{"Deployment", "hello/web", "Update", U, U, v1alpha2.HealthUnknown, ReasonNotReported}},
		wantHealth: v1alpha2.HealthUnknown,
	}, {
		name: "an apply conflict shows the Applied condition's reason, whatever the object's health",
		work: func(t *testing.T) *workv1.ManifestWork {
			return reported(work(t, "cluster1", 1, configMap), with(healthyReport(configMap, 0, 1),
				cond(workv1.ManifestApplied, F, 1, "ApplyConflict", "conflict with \"kubectl\": .data.message")))
		},
		want:       []manifestRow{{"ConfigMap", "hello/greeting", "Update", F, T, v1alpha2.Healthy, "ApplyConflict"}},
		wantHealth: v1alpha2.Healthy,
	}, {
		name: "a Deployment on its way is Progressing with kstatus's reason",
		work: func(t *testing.T) *workv1.ManifestWork {
			return reported(work(t, "cluster1", 1, configMap, deployment), healthyReport(configMap, 0, 1), with(healthyReport(deployment, 1, 1),
				cond(workv1.ManifestProgressing, T, 1, "ResourceInProgress", "Available: 0/2")))
		},
		want: []manifestRow{
			{"ConfigMap", "hello/greeting", "Update", T, T, v1alpha2.Healthy, ""},
			{"Deployment", "hello/web", "Update", T, T, v1alpha2.Progressing, "ResourceInProgress"},
		},
		wantHealth: v1alpha2.Progressing,
	}, {
		name: "Degraded wins over Progressing, for the manifest and the work",
		work: func(t *testing.T) *workv1.ManifestWork {
			return reported(work(t, "cluster1", 1, configMap, deployment),
				with(healthyReport(configMap, 0, 1), cond(workv1.ManifestProgressing, T, 1, "ResourceInProgress", "")),
				with(healthyReport(deployment, 1, 1), cond(workv1.ManifestProgressing, T, 1, "ResourceInProgress", ""),
					cond(workv1.ManifestDegraded, T, 1, "ResourceFailed", "Progress deadline exceeded")))
		},
		want: []manifestRow{
			{"ConfigMap", "hello/greeting", "Update", T, T, v1alpha2.Progressing, "ResourceInProgress"},
			{"Deployment", "hello/web", "Update", T, T, v1alpha2.Degraded, "ResourceFailed"},
		},
		wantHealth: v1alpha2.Degraded,
	}, {
		name: "an object deleted on the cluster is not available",
		work: func(t *testing.T) *workv1.ManifestWork {
			return reported(work(t, "cluster1", 1, configMap), with(healthyReport(configMap, 0, 1),
				cond(workv1.ManifestAvailable, F, 1, "ResourceNotAvailable", "Resource is not available")))
		},
		want:       []manifestRow{{"ConfigMap", "hello/greeting", "Update", T, F, v1alpha2.Healthy, "ResourceNotAvailable"}},
		wantHealth: v1alpha2.Healthy,
	}, {
		name: "an agent that reports no health (OCM's, without generations) leaves health Unknown",
		work: func(t *testing.T) *workv1.ManifestWork {
			return reported(work(t, "cluster1", 4, configMap), without(with(healthyReport(configMap, 0, 0)),
				workv1.ManifestProgressing, workv1.ManifestDegraded))
		},
		want:       []manifestRow{{"ConfigMap", "hello/greeting", "Update", T, T, v1alpha2.HealthUnknown, ReasonHealthNotReported}},
		wantHealth: v1alpha2.HealthUnknown,
	}, {
		name: "of an object's manifestConfigs, the first that sets a strategy decides it, as the agent reads them",
		work: func(t *testing.T) *workv1.ManifestWork {
			mw := reported(work(t, "cluster1", 1, configMap), healthyReport(configMap, 0, 1))
			first := strategy(configMap, "")
			first.UpdateStrategy = nil
			mw.Spec.ManifestConfigs = []workv1.ManifestConfigOption{first, strategy(configMap, workv1.UpdateStrategyTypeCreateOnly)}
			return mw
		},
		want:       []manifestRow{{"ConfigMap", "hello/greeting", "CreateOnly", T, T, v1alpha2.Healthy, ""}},
		wantHealth: v1alpha2.Healthy, wantHealthy: true,
	}, {
		name: "a manifestConfig naming objects with \"*\" gives them its strategy, as the agent applies them",
		work: func(t *testing.T) *workv1.ManifestWork {
			mw := reported(work(t, "cluster1", 1, configMap), healthyReport(configMap, 0, 1))
			any := strategy(configMap, workv1.UpdateStrategyTypeReadOnly)
			any.ResourceIdentifier.Namespace, any.ResourceIdentifier.Name = "*", "*"
			mw.Spec.ManifestConfigs = []workv1.ManifestConfigOption{any}
			return mw
		},
		want:       []manifestRow{{"ConfigMap", "hello/greeting", "ReadOnly", T, T, v1alpha2.Healthy, ""}},
		wantHealth: v1alpha2.Healthy, wantHealthy: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := ForWork(tc.work(t))
			checkRows(t, rowsOf(got), tc.want)
			if got.Health != tc.wantHealth || got.Healthy != tc.wantHealthy {
				t.Errorf("work health %s, healthy %t; want %s, %t", got.Health, got.Healthy, tc.wantHealth, tc.wantHealthy)
			}
			if problems := got.Problems(); (len(problems) == 0) != tc.wantHealthy {
				t.Errorf("problems %q, but healthy is %t", problems, got.Healthy)
			}
		})
	}
}

func TestForWorkKeepsMessagesAndFeedback(t *testing.T) {
	mw := reported(work(t, "cluster1", 1, deployment), with(healthyReport(deployment, 0, 1),
		cond(workv1.ManifestProgressing, T, 1, "ResourceInProgress", "Deployment not Available: 1 of 2 replicas")))
	mw.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values = []workv1.FeedbackValue{
		intFeedback("ReadyReplicas", 1),
		{Name: "paused", Value: workv1.FieldValue{Type: workv1.Boolean, Boolean: new(bool)}},
	}
	got := ForWork(mw).Manifests[0]
	if got.Message != "Deployment not Available: 1 of 2 replicas" {
		t.Errorf("message %q, want the Progressing condition's", got.Message)
	}
	want := []v1alpha2.FeedbackValue{{Name: "ReadyReplicas", Value: "1"}, {Name: "paused", Value: "false"}}
	if !slices.Equal(got.Feedback, want) {
		t.Errorf("feedback %+v, want %+v", got.Feedback, want)
	}
	if got.Group != "apps" || got.Version != "v1" || got.Ordinal != 0 {
		t.Errorf("identity %s/%s #%d, want apps/v1 #0", got.Group, got.Version, got.Ordinal)
	}
}

func TestForWorkTakesTheAgentsWordForAManifestItCannotDecode(t *testing.T) {
	mw := reported(work(t, "cluster1", 1, configMap), with(healthyReport(configMap, 0, 1),
		cond(workv1.ManifestApplied, F, 1, "AppliedManifestFailed", "decode: invalid")))
	mw.Spec.Workload.Manifests[0].Raw = []byte(`{"kind":`)
	got := ForWork(mw)
	want := []manifestRow{{"ConfigMap", "hello/greeting", "Update", F, T, v1alpha2.Healthy, "AppliedManifestFailed"}}
	checkRows(t, rowsOf(got), want)
}

// A manifest of a kind the hub did not know is cluster-scoped names a namespace; the agent, whose spoke
// serves the kind, applies it cluster-wide and reports it without one: it is the same object.
func TestForWorkMatchesAClusterScopedObjectReportedWithoutItsNamespace(t *testing.T) {
	binding := object{"example.io/v1", "ClusterThing", "team-a", "grab"}
	report := healthyReport(binding, 0, 1)
	report.ResourceMeta.Namespace, report.ResourceMeta.Resource = "", "clusterthings"
	got := ForWork(reported(work(t, "cluster1", 1, binding), report))
	want := []manifestRow{{"ClusterThing", "team-a/grab", "Update", T, T, v1alpha2.Healthy, ""}}
	checkRows(t, rowsOf(got), want)
	if !got.Healthy {
		t.Errorf("the work is not healthy: %+v", got)
	}
}
