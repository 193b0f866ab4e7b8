package workreport_test

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-mc/ferry/pkg/workreport"
)

// A Drifted condition's message is read back as it was written: the count an agent carries on after a
// restart, and what the hub shows.
func TestDriftMessageReadsBack(t *testing.T) {
	at := time.Date(2026, 11, 28, 23, 50, 53, 0, time.UTC)
	for _, d := range []workreport.Drift{
		{Count: 1, Managers: []string{"kubectl-edit"}, Fields: []string{".spec.replicas"}, Time: at},
		{Count: 12, Managers: []string{"kubectl-edit", "hpa-controller"}, Fields: []string{".data.a", ".metadata.labels[app.kubernetes.io/name]"}, MoreFields: 3, Time: at},
		{Count: 2, Fields: []string{".spec.template.spec.containers[0].image"}, Time: at},
	} {
		c := &metav1.Condition{Type: workreport.ConditionDrifted, Status: metav1.ConditionTrue, Message: workreport.DriftMessage(d)}
		got, ok := workreport.ReadDrift(c)
		if !ok || !reflect.DeepEqual(got, d) {
			t.Errorf("%q read back as %+v (%v), want %+v", c.Message, got, ok, d)
		}
	}
	for _, msg := range []string{"edited", "Changed on the cluster by kubectl-edit at yesterday (.spec.replicas), and put back; 2 times so far"} {
		if _, ok := workreport.ReadDrift(&metav1.Condition{Type: workreport.ConditionDrifted, Status: metav1.ConditionTrue, Message: msg}); ok {
			t.Errorf("a Drifted condition of another format was read as Ferry's: %q", msg)
		}
	}
	if _, ok := workreport.ReadDrift(nil); ok {
		t.Error("no condition was read as drift")
	}
}

// A manifest's drift counts for the generation of the work it was reported for: one reported for an
// earlier generation (a delivery since) says nothing.
func TestDriftOfIsAboutTheWorksGeneration(t *testing.T) {
	d := workreport.Drift{Count: 2, Managers: []string{"kubectl-edit"}, Fields: []string{".data.mode"}, Time: time.Date(2026, 11, 28, 23, 50, 53, 0, time.UTC)}
	conds := []metav1.Condition{
		{Type: "Applied", Status: metav1.ConditionTrue, ObservedGeneration: 3},
		{Type: workreport.ConditionDrifted, Status: metav1.ConditionTrue, ObservedGeneration: 3, Message: workreport.DriftMessage(d)},
	}
	if got, ok := workreport.DriftOf(conds, 3); !ok || !reflect.DeepEqual(got, d) {
		t.Errorf("drift of generation 3: %+v (%v), want %+v", got, ok, d)
	}
	if got, ok := workreport.DriftOf(conds, 4); ok {
		t.Errorf("drift reported for generation 3 read for generation 4: %+v", got)
	}
	if got, ok := workreport.DriftOf(conds[:1], 3); ok {
		t.Errorf("drift read from a manifest without a Drifted condition: %+v", got)
	}
}
