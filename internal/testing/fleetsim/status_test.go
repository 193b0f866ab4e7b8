package fleetsim

import (
	"reflect"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/internal/statusview"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// row is what `kubectl ferry status work` shows of one manifest.
type row struct {
	Kind               string
	Applied, Available metav1.ConditionStatus
	Health             v1alpha2.Health
	Message            string
	Feedback           []v1alpha2.FeedbackValue
}

func rows(v statusview.Work) []row {
	var out []row
	for _, m := range v.Manifests {
		out = append(out, row{m.Kind, m.Applied, m.Available, m.Health, m.Message, m.Feedback})
	}
	return out
}

// reportedAs is the work with the status a simulated agent writes for it in state h.
func reportedAs(t *testing.T, mw *workv1.ManifestWork, h Health) *workv1.ManifestWork {
	t.Helper()
	w, err := WorkOf(mw)
	if err != nil {
		t.Fatal(err)
	}
	out := mw.DeepCopy()
	out.Status = Status(w, h, time.Now())
	return out
}

func replicas(ready, all string) []v1alpha2.FeedbackValue {
	return []v1alpha2.FeedbackValue{{Name: "ReadyReplicas", Value: ready}, {Name: "Replicas", Value: all}, {Name: "AvailableReplicas", Value: ready}}
}

// A healthy report reads, through the readers the hub's AppConfig status and kubectl ferry share, as
// a work whose every manifest is applied, available and healthy, with the Deployment's replicas as
// feedback: what the hub counts as a healthy cluster.
func TestHealthyStatusReadsAsAHealthyCluster(t *testing.T) {
	v := statusview.ForWork(reportedAs(t, hubWork("c1", 3), Healthy))
	want := []row{
		{"Deployment", "True", "True", v1alpha2.Healthy, "", replicas("2", "2")},
		{"Service", "True", "True", v1alpha2.Healthy, "", nil},
	}
	if got := rows(v); !reflect.DeepEqual(got, want) {
		t.Errorf("manifests:\n got %+v\nwant %+v", got, want)
	}
	if v.Applied != metav1.ConditionTrue || v.Available != metav1.ConditionTrue || v.Health != v1alpha2.Healthy || !v.Healthy {
		t.Errorf("work: applied %s, available %s, health %s, healthy %t; want True, True, Healthy, true", v.Applied, v.Available, v.Health, v.Healthy)
	}
}

// A degraded report fails the workload as kstatus fails a Deployment past its progress deadline; the
// trait stays healthy, and the work as a whole is Degraded (the hub then counts the cluster as not
// healthy while still applied and available).
func TestDegradedStatusReadsAsADegradedWorkload(t *testing.T) {
	mw := reportedAs(t, hubWork("c1", 3), Degraded)
	v := statusview.ForWork(mw)
	want := []row{
		{"Deployment", "True", "True", v1alpha2.Degraded, "Progress deadline exceeded", replicas("0", "2")},
		{"Service", "True", "True", v1alpha2.Healthy, "", nil},
	}
	if got := rows(v); !reflect.DeepEqual(got, want) {
		t.Errorf("manifests:\n got %+v\nwant %+v", got, want)
	}
	if v.Applied != metav1.ConditionTrue || v.Available != metav1.ConditionTrue || v.Health != v1alpha2.Degraded || v.Healthy {
		t.Errorf("work: applied %s, available %s, health %s, healthy %t; want True, True, Degraded, false", v.Applied, v.Available, v.Health, v.Healthy)
	}
	// The work's own health conditions are the agent's aggregate: Degraded names the workload.
	degraded := findCondition(mw.Status.Conditions, workv1.WorkDegraded)
	if degraded == nil || degraded.Status != metav1.ConditionTrue || degraded.Message != "1 of 2 resources are Degraded: Deployment shop/web" {
		t.Errorf("work Degraded condition = %+v; want True naming Deployment shop/web", degraded)
	}
}

// A report is about the generation it was written for: once the hub rewrites the work, the old report
// counts for nothing, as an agent's report of an older generation does not.
func TestStatusIsAboutTheWorksGeneration(t *testing.T) {
	mw := reportedAs(t, hubWork("c1", 3), Healthy)
	for _, m := range mw.Status.ResourceStatus.Manifests {
		for _, c := range m.Conditions {
			if c.ObservedGeneration != 3 {
				t.Errorf("manifest %d condition %s: observedGeneration %d, want 3", m.ResourceMeta.Ordinal, c.Type, c.ObservedGeneration)
			}
		}
	}
	mw.Generation = 4
	v := statusview.ForWork(mw)
	if v.Applied != metav1.ConditionUnknown || v.Healthy {
		t.Errorf("work at a newer generation: applied %s, healthy %t; want Unknown, false", v.Applied, v.Healthy)
	}
}

// The agent's condition order and reasons, so that a diff of a real and a simulated work shows only
// the times.
func TestStatusConditionsAreTheAgents(t *testing.T) {
	mw := reportedAs(t, hubWork("c1", 1), Healthy)
	types := func(cs []metav1.Condition) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Type+"/"+c.Reason)
		}
		return out
	}
	if got, want := types(mw.Status.Conditions), []string{"Degraded/ResourcesNotDegraded", "Progressing/ResourcesNotProgressing",
		"Applied/AppliedManifestWorkComplete", "Available/ResourcesAvailable"}; !slices.Equal(got, want) {
		t.Errorf("work conditions %q, want %q", got, want)
	}
	if got, want := types(mw.Status.ResourceStatus.Manifests[0].Conditions), []string{"Applied/AppliedManifestComplete", "Available/ResourceAvailable",
		"StatusFeedbackSynced/StatusFeedbackSynced", "Progressing/ResourceCurrent", "Degraded/ResourceCurrent"}; !slices.Equal(got, want) {
		t.Errorf("Deployment conditions %q, want %q", got, want)
	}
	// No feedback asked: StatusFeedbackSynced with OCM's reason for it, as the agent writes it (the
	// simulator's own builder left the condition out until it called the agent's).
	if got, want := types(mw.Status.ResourceStatus.Manifests[1].Conditions), []string{"Applied/AppliedManifestComplete", "Available/ResourceAvailable",
		"StatusFeedbackSynced/NoStatusFeedbackSynced", "Progressing/ResourceCurrent", "Degraded/ResourceCurrent"}; !slices.Equal(got, want) {
		t.Errorf("Service conditions %q, want %q", got, want)
	}
}

func findCondition(cs []metav1.Condition, typ string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return nil
}
