package hub_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/pkg/render"
)

// completedWork writes a ManifestWork of a cluster namespace no agent serves, with a TTL (nil: none)
// and the Complete condition an agent would report, True since completedAt (zero: not Complete).
func (f *fixture) completedWork(ns, name string, ttl *int64, completedAt time.Time, labels map[string]string) *workv1.ManifestWork {
	f.t.Helper()
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}}
	if ttl != nil {
		w.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeForeground, TTLSecondsAfterFinished: ttl}
	}
	f.mustCreate(f.hub, w)
	status := metav1.ConditionFalse
	if !completedAt.IsZero() {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1.WorkComplete, Status: status, Reason: "ResourcesComplete",
		Message: "the Job finished", LastTransitionTime: metav1.NewTime(completedAt)})
	if err := f.hub.Status().Update(f.t.Context(), w); err != nil {
		f.t.Fatal(err)
	}
	return w
}

func (f *fixture) workExists(w *workv1.ManifestWork) bool {
	f.t.Helper()
	err := f.hub.Get(f.t.Context(), client.ObjectKeyFromObject(w), &workv1.ManifestWork{})
	if err != nil && !apierrors.IsNotFound(err) {
		f.t.Fatal(err)
	}
	return err == nil
}

// The namespace of a cluster no agent serves: nothing but the test writes the works' status there.
func (f *fixture) quietClusterNamespace() string {
	ns := "ttl-" + strings.ToLower(rand.String(6))
	f.mustCreate(f.hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	return ns
}

// ferry-hub deletes any ManifestWork once it has been Complete for its ttlSecondsAfterFinished, as
// OCM's hub does: at once with 0, after the TTL counted from when it completed otherwise, and never one
// that is not Complete, has no TTL, or belongs to a ManifestWorkReplicaSet.
func TestCompletedWorksAreDeletedAfterTheirTTL(t *testing.T) {
	f := setup(t)
	ns := f.quietClusterNamespace()
	now := time.Now().Truncate(time.Second) // conditions keep seconds
	later := f.completedWork(ns, "after-3s", ptr.To[int64](3), now, nil)
	atOnce := f.completedWork(ns, "at-once", ptr.To[int64](0), now, nil)
	kept := []*workv1.ManifestWork{
		f.completedWork(ns, "no-ttl", nil, now, nil),
		f.completedWork(ns, "not-complete", ptr.To[int64](0), time.Time{}, nil),
		f.completedWork(ns, "replicated", ptr.To[int64](0), now,
			map[string]string{workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: "ns.mwrs"}),
	}
	o := hubOptions(render.ApplyOnceOff)
	o.DeleteCompletedWorks = true
	f.startHub(o)

	f.eventually("the work with ttlSecondsAfterFinished 0 deleted", func(context.Context) (bool, error) { return !f.workExists(atOnce), nil })
	if time.Now().Before(now.Add(3*time.Second)) && !f.workExists(later) {
		t.Fatalf("the work with ttlSecondsAfterFinished 3 was deleted %s after it completed", time.Since(now))
	}
	f.eventually("the work with ttlSecondsAfterFinished 3 deleted", func(context.Context) (bool, error) { return !f.workExists(later), nil })
	if gone := time.Since(now); gone < 3*time.Second {
		t.Errorf("the work with ttlSecondsAfterFinished 3 was deleted %s after it completed", gone)
	}
	for _, w := range kept {
		if !f.workExists(w) {
			t.Errorf("work %s was deleted", w.Name)
		}
	}
}

// --delete-completed-works=false: nothing is deleted.
func TestCompletedWorksAreKeptWhenCleanupIsOff(t *testing.T) {
	f := setup(t)
	ns := f.quietClusterNamespace()
	w := f.completedWork(ns, "at-once", ptr.To[int64](0), time.Now(), nil)
	o := hubOptions(render.ApplyOnceOff)
	o.DeleteCompletedWorks = false
	f.startHub(o)
	f.consistently("the completed work kept", 2*time.Second, func(context.Context) (bool, error) { return f.workExists(w), nil })
}
