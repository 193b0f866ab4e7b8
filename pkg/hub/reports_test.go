package hub

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// An agent's status reports of an AppConfig's works are gathered for reportBatch: a stream of reports
// costs one reconcile, not one each. A change of a work's spec, labels or deletion is not held back.
func TestAgentReportsAreBatchedAndChangesAreNot(t *testing.T) {
	const batch = 200 * time.Millisecond
	app := types.NamespacedName{Namespace: "team", Name: "web"}
	work := func(generation int64, status metav1.ConditionStatus) *workv1.ManifestWork {
		return &workv1.ManifestWork{
			ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "team.web", Generation: generation,
				Labels: map[string]string{LabelAppConfigNamespace: app.Namespace, LabelAppConfigName: app.Name}},
			Status: workv1.ManifestWorkStatus{Conditions: []metav1.Condition{{Type: workv1.WorkAvailable, Status: status}}},
		}
	}
	b := batchedReports{reportBatch: batch, appConfigsOf: func(_ context.Context, o client.Object) []reconcile.Request {
		if a, ok := appConfigOfLabels(o); ok {
			return []reconcile.Request{{NamespacedName: a}}
		}
		return nil
	}}
	newQueue := func(t *testing.T) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		t.Cleanup(q.ShutDown)
		return q
	}

	t.Run("reports", func(t *testing.T) {
		q := newQueue(t)
		start := time.Now()
		for i := range 50 {
			status := metav1.ConditionFalse
			if i%2 == 1 {
				status = metav1.ConditionTrue
			}
			b.Update(t.Context(), event.UpdateEvent{ObjectOld: work(1, metav1.ConditionUnknown), ObjectNew: work(1, status)}, q)
		}
		if n := q.Len(); n != 0 {
			t.Fatalf("%d AppConfigs queued at once for agents' reports, want none before %s", n, batch)
		}
		got, _ := q.Get() // blocks until the batch is over
		if waited := time.Since(start); got.NamespacedName != app || waited < batch {
			t.Fatalf("reconciled %v after %s, want %v after at least %s", got, waited, app, batch)
		}
		q.Done(got)
		if n := q.Len(); n != 0 {
			t.Errorf("50 reports queued %d more reconciles of %v, want the one", n, app)
		}
	})

	for _, c := range []struct {
		name     string
		old, new *workv1.ManifestWork
	}{
		{"spec", work(1, metav1.ConditionTrue), work(2, metav1.ConditionTrue)},
		{"deletion", work(1, metav1.ConditionTrue), func() *workv1.ManifestWork {
			w := work(1, metav1.ConditionTrue)
			w.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			return w
		}()},
		{"annotations", work(1, metav1.ConditionTrue), func() *workv1.ManifestWork {
			w := work(1, metav1.ConditionTrue)
			w.Annotations = map[string]string{AnnotationSpecHash: "other"}
			return w
		}()},
	} {
		t.Run(c.name+" change", func(t *testing.T) {
			q := newQueue(t)
			b.Update(t.Context(), event.UpdateEvent{ObjectOld: c.old, ObjectNew: c.new}, q)
			if n := q.Len(); n != 1 {
				t.Errorf("a change of the work's %s queued %d reconciles at once, want 1", c.name, n)
			}
		})
	}

	t.Run("relabelled", func(t *testing.T) {
		q := newQueue(t)
		moved := work(1, metav1.ConditionTrue)
		moved.Labels = map[string]string{LabelAppConfigNamespace: "team", LabelAppConfigName: "api"}
		b.Update(t.Context(), event.UpdateEvent{ObjectOld: work(1, metav1.ConditionTrue), ObjectNew: moved}, q)
		if n := q.Len(); n != 2 {
			t.Errorf("a work relabelled from one AppConfig to another queued %d reconciles at once, want both AppConfigs", n)
		}
	})
}

// An AppConfig's own status writes do not bring it back at once; every other change of it does.
func TestAppConfigChangedPassesAllButStatusWrites(t *testing.T) {
	base := func() *v1alpha2.ApplicationConfiguration {
		return &v1alpha2.ApplicationConfiguration{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", Generation: 3,
			Labels: map[string]string{"tier": "web"}, Annotations: map[string]string{"note": "a"}, Finalizers: []string{AppConfigFinalizer}}}
	}
	for _, c := range []struct {
		name   string
		change func(*v1alpha2.ApplicationConfiguration)
		want   bool
	}{
		{"status", func(a *v1alpha2.ApplicationConfiguration) {
			a.ResourceVersion = "8"
			a.Status.Summary = &v1alpha2.Summary{Clusters: 2, Applied: "1/2"}
		}, false},
		{"spec", func(a *v1alpha2.ApplicationConfiguration) { a.Generation++ }, true},
		{"labels", func(a *v1alpha2.ApplicationConfiguration) { a.Labels["tier"] = "api" }, true},
		{"annotations", func(a *v1alpha2.ApplicationConfiguration) { a.Annotations[v1alpha2.AnnotationRolloutUndo] = "web-v1@3" }, true},
		{"finalizers", func(a *v1alpha2.ApplicationConfiguration) { a.Finalizers = nil }, true},
		{"deletion", func(a *v1alpha2.ApplicationConfiguration) { a.DeletionTimestamp = &metav1.Time{Time: time.Now()} }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			updated := base()
			c.change(updated)
			if got := appConfigChanged.Update(event.UpdateEvent{ObjectOld: base(), ObjectNew: updated}); got != c.want {
				t.Errorf("update of its %s: passed %v, want %v", c.name, got, c.want)
			}
		})
	}
	if !appConfigChanged.Create(event.CreateEvent{Object: base()}) || !appConfigChanged.Delete(event.DeleteEvent{Object: base()}) {
		t.Error("a created or deleted AppConfig did not pass")
	}

	// The status writes it lets pass by come back a batch later, as a report: the reconcile then mends
	// a write computed from a cache that had not seen the one before.
	const batch = 100 * time.Millisecond
	written := statusWritten(batch)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	specChanged := base()
	specChanged.Generation++
	written.Update(t.Context(), event.UpdateEvent{ObjectOld: base(), ObjectNew: specChanged}, q)
	statusOnly := base()
	statusOnly.Status.Summary = &v1alpha2.Summary{Clusters: 2, Applied: "2/2"}
	start := time.Now()
	written.Update(t.Context(), event.UpdateEvent{ObjectOld: base(), ObjectNew: statusOnly}, q)
	if n := q.Len(); n != 0 {
		t.Fatalf("%d AppConfigs queued at once, want none: a spec change is For's, a status write waits a batch", n)
	}
	got, _ := q.Get()
	if waited := time.Since(start); got.Name != "web" || waited < batch {
		t.Fatalf("got %v after %s, want team/web after at least %s", got, waited, batch)
	}
	q.Done(got)
	if n := q.Len(); n != 0 {
		t.Errorf("%d more queued, want only the status write's", n)
	}
}
