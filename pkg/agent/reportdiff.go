package agent

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/workreport"
)

// reportOnly reports whether work is a report-only delivery (workreport.AnnotationReportDiff): each of
// its manifests is read, never written whatever its updateStrategy says, and compared with the object,
// and the work owns nothing.
func reportOnly(work *workv1.ManifestWork) bool {
	return work.Annotations[workreport.AnnotationReportDiff] == "true"
}

// setManifestDiff sets a manifest's WouldChange condition, about generation gen, from what its
// report-only apply compared (r.result.Diff), and removes it from a manifest that was not compared: of
// a work that is not report-only, or that failed or waits (its Applied condition says why).
func setManifestDiff(conds *[]metav1.Condition, r *manifestResult, gen int64) {
	if !r.reportOnly || r.err != nil || r.waiting != "" || r.result.Diff == nil {
		meta.RemoveStatusCondition(conds, workreport.ConditionWouldChange)
		return
	}
	c := workreport.DiffCondition(*r.result.Diff)
	c.ObservedGeneration = gen
	meta.SetStatusCondition(conds, c)
}

// setWorkDiff sets a report-only work's own WouldChange condition from its manifests' about generation
// gen: how many of the objects compared would change. A work that is not report-only, or none of whose
// manifests could be compared, has none.
func setWorkDiff(conds *[]metav1.Condition, manifests []workv1.ManifestCondition, gen int64, reportOnly bool) {
	changing, compared := 0, 0
	for i := range manifests {
		c := meta.FindStatusCondition(manifests[i].Conditions, workreport.ConditionWouldChange)
		if c == nil || c.ObservedGeneration != gen {
			continue
		}
		compared++
		if c.Status == metav1.ConditionTrue {
			changing++
		}
	}
	if !reportOnly || compared == 0 {
		meta.RemoveStatusCondition(conds, workreport.ConditionWouldChange)
		return
	}
	c := workreport.WorkDiffCondition(changing, compared)
	c.ObservedGeneration = gen
	meta.SetStatusCondition(conds, c)
}
