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
	if _, ok := workreport.ReadDrift(&metav1.Condition{Type: workreport.ConditionDrifted, Status: metav1.ConditionTrue, Message: "edited"}); ok {
		t.Error("a Drifted condition of another format was read as Ferry's")
	}
	if _, ok := workreport.ReadDrift(nil); ok {
		t.Error("no condition was read as drift")
	}
}
