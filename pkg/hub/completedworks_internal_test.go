package hub

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
)

func TestComputeCompletedWorkDeletion(t *testing.T) {
	completedAt := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	work := func(ttl *int64, complete metav1.ConditionStatus, mutate ...func(*workv1.ManifestWork)) *workv1.ManifestWork {
		w := &workv1.ManifestWork{}
		if ttl != nil {
			w.Spec.DeleteOption = &workv1.DeleteOption{TTLSecondsAfterFinished: ttl}
		}
		if complete != "" {
			w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkComplete, Status: complete, LastTransitionTime: metav1.NewTime(completedAt)}}
		}
		for _, m := range mutate {
			m(w)
		}
		return w
	}
	for _, tc := range []struct {
		name   string
		work   *workv1.ManifestWork
		now    time.Time
		remove bool
		after  time.Duration
	}{
		{"no TTL", work(nil, metav1.ConditionTrue), completedAt.Add(time.Hour), false, 0},
		{"not Complete", work(ptr.To[int64](0), metav1.ConditionFalse), completedAt.Add(time.Hour), false, 0},
		{"no Complete condition", work(ptr.To[int64](0), ""), completedAt.Add(time.Hour), false, 0},
		{"TTL 0", work(ptr.To[int64](0), metav1.ConditionTrue), completedAt, true, 0},
		{"before the TTL", work(ptr.To[int64](60), metav1.ConditionTrue), completedAt.Add(20 * time.Second), false, 40 * time.Second},
		{"at the TTL", work(ptr.To[int64](60), metav1.ConditionTrue), completedAt.Add(time.Minute), true, 0},
		{"a clock behind the completion", work(ptr.To[int64](60), metav1.ConditionTrue), completedAt.Add(-time.Minute), false, 2 * time.Minute},
		{"being deleted", work(ptr.To[int64](0), metav1.ConditionTrue, func(w *workv1.ManifestWork) {
			w.DeletionTimestamp = &metav1.Time{Time: completedAt}
		}), completedAt.Add(time.Hour), false, 0},
		{"of a ManifestWorkReplicaSet", work(ptr.To[int64](0), metav1.ConditionTrue, func(w *workv1.ManifestWork) {
			w.Labels = map[string]string{workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: "ns.set"}
		}), completedAt.Add(time.Hour), false, 0},
	} {
		remove, after := computeCompletedWorkDeletion(tc.work, tc.now)
		if remove != tc.remove || after != tc.after {
			t.Errorf("%s: remove %v after %s, want %v after %s", tc.name, remove, after, tc.remove, tc.after)
		}
	}
}
