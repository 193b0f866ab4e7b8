package hub

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// The cache keeps of a work exactly what the hub reads: the AppConfig's status from a slimmed work is
// the status from the whole one, for works that are fine, progressing, degraded, not applied and
// drifted; the labels and the spec hash deliver compares stay. A manifest that is fine and never
// drifted keeps no message.
func TestSlimWorkKeepsWhatTheStatusShows(t *testing.T) {
	notApplied := reportedWork("c4", v1alpha2.Healthy, 0)
	applied := &notApplied.Status.ResourceStatus.Manifests[0].Conditions[0]
	applied.Status, applied.Message = metav1.ConditionFalse, "conflict with kubectl on .spec.replicas"
	drifted := reportedWork("c5", v1alpha2.Healthy, 0)
	driftOn(drifted, 0, workreport.Drift{Count: 2, Managers: []string{"kubectl-edit"}, Fields: []string{".spec.replicas"},
		Time: time.Date(2026, 11, 28, 23, 50, 53, 0, time.UTC)}, drifted.Generation)
	for _, mw := range []*workv1.ManifestWork{
		reportedWork("c1", v1alpha2.Healthy, 0), reportedWork("c2", v1alpha2.Progressing, 40), reportedWork("c3", v1alpha2.Degraded, 40), notApplied, drifted,
	} {
		mw.Labels = map[string]string{LabelAppConfigNamespace: "default", LabelAppConfigName: "web"}
		mw.Annotations = map[string]string{AnnotationSpecHash: "abc"}
		mw.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "ferry-hub"}}
		mw.Spec.Workload.Manifests = []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(`{"kind":"Deployment"}`)}}}
		for i := range mw.Status.Conditions {
			mw.Status.Conditions[i].Message = "all manifests applied"
		}
		current := map[string]bool{"Deployment/web": true}
		slimmed, err := slimWork(mw.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		slim := slimmed.(*workv1.ManifestWork)
		for _, detail := range []bool{false, true} {
			if got, want := clusterStatus(slim, current, detail), clusterStatus(mw, current, detail); !reflect.DeepEqual(got, want) {
				t.Errorf("%s (detail %t): from the slimmed work %+v, from the whole %+v", mw.Namespace, detail, got, want)
			}
		}
		if got, want := driftedObjectsOf(slim, current), driftedObjectsOf(mw, current); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: drifted objects from the slimmed work %+v, from the whole %+v", mw.Namespace, got, want)
		}
		if mw == drifted && len(driftedObjectsOf(slim, current)) != 1 {
			t.Errorf("%s: the drifted object is not read from the slimmed work: %+v", mw.Namespace, slim.Status.ResourceStatus.Manifests)
		}
		if mw.Namespace == "c1" {
			for _, c := range slim.Status.ResourceStatus.Manifests[0].Conditions {
				if c.Message != "" {
					t.Errorf("%s: a fine manifest keeps the message of %s: %q", mw.Namespace, c.Type, c.Message)
				}
			}
		}
		if !upToDate(slim, mw) || !reflect.DeepEqual(slim.Labels, mw.Labels) {
			t.Errorf("%s: labels or spec hash lost: %v %v", mw.Namespace, slim.Labels, slim.Annotations)
		}
		if slim.ManagedFields != nil || slim.Spec.Workload.Manifests != nil {
			t.Errorf("%s: managedFields or manifests kept", mw.Namespace)
		}
		// A relist hands the cache's transform each work twice (relist.NewInformer slims each page as
		// it is read, the informer then again): once more changes nothing, Complete included.
		slim.Status.Conditions = append(slim.Status.Conditions, metav1.Condition{Type: workv1.WorkComplete, Status: metav1.ConditionTrue, Reason: "Done", Message: "done"})
		once, err := slimWork(slim)
		if err != nil {
			t.Fatal(err)
		}
		onceCopy := once.(*workv1.ManifestWork).DeepCopy()
		twice, err := slimWork(once)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(twice, onceCopy) {
			t.Errorf("%s: slimming a slimmed work changes it: %+v, then %+v", mw.Namespace, onceCopy.Status, twice.(*workv1.ManifestWork).Status)
		}
	}
}

// The cache keeps a preview's WouldChange conditions whole — what status.diff reads of it is what the
// whole work says — and nothing of them for a work that is not a preview.
func TestSlimWorkKeepsThePreviewsDiff(t *testing.T) {
	diff := workreport.Diff{Fields: []workreport.FieldChange{{Path: ".spec.replicas", Live: "1", Want: "3"}}}
	for _, preview := range []bool{true, false} {
		mw := reportedWork("c1", v1alpha2.Healthy, 0)
		if preview {
			mw.Annotations = map[string]string{workreport.AnnotationReportDiff: "true"}
		}
		c := workreport.DiffCondition(diff)
		c.ObservedGeneration = mw.Generation
		mw.Status.ResourceStatus.Manifests[0].Conditions = append(mw.Status.ResourceStatus.Manifests[0].Conditions, c)
		w := workreport.WorkDiffCondition(1, 1)
		w.ObservedGeneration = mw.Generation
		mw.Status.Conditions = append(mw.Status.Conditions, w)
		slimmed, err := slimWork(mw.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		slim := slimmed.(*workv1.ManifestWork)
		clusters := []string{"c1"}
		got := previewedDiff(7, clusters, map[string]*workv1.ManifestWork{"c1": slim})
		if !preview {
			if got.Reported != 0 {
				t.Errorf("a work that is no preview keeps its WouldChange conditions: %+v", slim.Status)
			}
			continue
		}
		if want := previewedDiff(7, clusters, map[string]*workv1.ManifestWork{"c1": mw}); !reflect.DeepEqual(got, want) || got.Objects != 1 {
			t.Errorf("status.diff from the slimmed preview %+v, from the whole %+v", got, want)
		}
	}
}
