package v1alpha2

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	isTrue  = metav1.ConditionTrue
	isFalse = metav1.ConditionFalse
	unknown = metav1.ConditionUnknown
)

// Fine is the same rule for a manifest's status and a cluster's: all three verdicts good.
func TestFine(t *testing.T) {
	for _, tc := range []struct {
		applied, available metav1.ConditionStatus
		health             Health
		want               bool
	}{
		{isTrue, isTrue, Healthy, true},
		{isFalse, isTrue, Healthy, false},
		{unknown, isTrue, Healthy, false},
		{isTrue, isFalse, Healthy, false},
		{isTrue, unknown, Healthy, false},
		{isTrue, isTrue, Progressing, false},
		{isTrue, isTrue, Degraded, false},
		{isTrue, isTrue, HealthUnknown, false},
		{"", "", "", false},
	} {
		m := ManifestStatus{Applied: tc.applied, Available: tc.available, Health: tc.health}
		cs := ClusterStatus{Applied: tc.applied, Available: tc.available, Health: tc.health}
		if Fine(tc.applied, tc.available, tc.health) != tc.want || m.Fine() != tc.want || cs.Fine() != tc.want {
			t.Errorf("applied %q, available %q, health %q: Fine %v, manifest %v, cluster %v; want %v", tc.applied, tc.available, tc.health,
				Fine(tc.applied, tc.available, tc.health), m.Fine(), cs.Fine(), tc.want)
		}
	}
}
