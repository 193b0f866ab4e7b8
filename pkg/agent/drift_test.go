package agent_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/workreport"
)

// editConfigMap changes key k of the spoke's ConfigMap name to value as `kubectl edit` does (a full
// update under kubectl's manager name for edits).
func (f *agentFixture) editConfigMap(name, value string) {
	f.t.Helper()
	cm, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(f.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	cm.Data["k"] = value
	if _, err := f.kube.CoreV1().ConfigMaps(f.cluster).Update(f.t.Context(), cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		f.t.Fatal(err)
	}
}

// An edit on the spoke of a field the work sets is put back and reported on the work: the manifest's
// Drifted condition names the field, the manager the API server recorded and when, and counts the
// edits; the work's own Drifted condition names the object. Objects never edited have none, and a new
// generation of the work starts afresh.
func TestDriftIsReportedOnTheWork(t *testing.T) {
	f := startAgent(t, withResync(time.Hour))
	w := f.create(f.work("drifting", namespaceManifest, configMapA))
	w = f.waitWork(w.Name, "applied", allApplied)
	if c := meta.FindStatusCondition(w.Status.Conditions, workreport.ConditionDrifted); c != nil {
		t.Fatalf("a work nothing changed has condition %+v", c)
	}

	before := time.Now().Add(-time.Second)
	edits := gatherMetrics(t).value("ferry_agent_drift_reverted_total", "kind", "ConfigMap", "manager", "kubectl-edit")
	for count := 1; count <= 2; count++ {
		f.editConfigMap("a", "edited")
		var last string
		w = f.waitWork(w.Name, "the edit reported Drifted", func(w *workv1.ManifestWork) bool {
			c := manifestCondition(w, 1, workreport.ConditionDrifted)
			d, ok := workreport.ReadDrift(c)
			if c != nil {
				last = c.Message
			}
			return ok && d.Count == count && c.ObservedGeneration == w.Generation
		})
		d, _ := workreport.ReadDrift(manifestCondition(w, 1, workreport.ConditionDrifted))
		if !slices.Equal(d.Fields, []string{".data.k"}) || !slices.Equal(d.Managers, []string{"kubectl-edit"}) || d.Time.Before(before) {
			t.Errorf("edit %d reported as %q: want .data.k changed by kubectl-edit after %s", count, last, before.Format(time.RFC3339))
		}
		f.eventually("the edit put back", func(ctx context.Context) (bool, error) {
			cm, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(ctx, "a", metav1.GetOptions{})
			return err == nil && cm.Data["k"] == "1", nil
		})
	}
	if n := gatherMetrics(t).value("ferry_agent_drift_reverted_total", "kind", "ConfigMap", "manager", "kubectl-edit") - edits; n != 2 {
		t.Errorf("ferry_agent_drift_reverted_total{kind=ConfigMap,manager=kubectl-edit} grew by %v over 2 edits, want 2", n)
	}
	if c := manifestCondition(w, 0, workreport.ConditionDrifted); c != nil {
		t.Errorf("the Namespace, never edited, has condition %+v", c)
	}
	c := meta.FindStatusCondition(w.Status.Conditions, workreport.ConditionDrifted)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "1 of 2 objects") ||
		!strings.Contains(c.Message, "ConfigMap "+f.cluster+"/a by kubectl-edit (2)") {
		t.Errorf("the work's Drifted condition is %+v; want True naming ConfigMap %s/a, kubectl-edit, 2 edits", c, f.cluster)
	}

	f.update(w.Name, func(w *workv1.ManifestWork) {
		w.Spec.Workload.Manifests = f.work("", namespaceManifest, configMapA, configMapB).Spec.Workload.Manifests
	})
	f.waitWork(w.Name, "a new generation without drift", func(w *workv1.ManifestWork) bool {
		return allApplied(w) && len(w.Status.ResourceStatus.Manifests) == 3 &&
			meta.FindStatusCondition(w.Status.Conditions, workreport.ConditionDrifted) == nil &&
			manifestCondition(w, 1, workreport.ConditionDrifted) == nil
	})
}
