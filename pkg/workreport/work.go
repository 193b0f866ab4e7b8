package workreport

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// WorkConditionTypes are the work's own conditions a report is judged by.
var WorkConditionTypes = []string{workv1.WorkApplied, workv1.WorkAvailable}

// WorkCondition is the work's own condition typ when it is about the work's generation gen: a verdict
// on an earlier spec says nothing about the current one, and neither does one that records no
// generation (observedGeneration 0). nil otherwise.
func WorkCondition(conds []metav1.Condition, typ string, gen int64) *metav1.Condition {
	return aboutGeneration(conds, typ, gen)
}

// aboutGeneration is the condition typ of conds when it records generation gen, nil otherwise.
func aboutGeneration(conds []metav1.Condition, typ string, gen int64) *metav1.Condition {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil || c.ObservedGeneration != gen {
		return nil
	}
	return c
}

// WorkStatus is the status of the work's own condition typ (Applied, Available) about generation gen;
// Unknown when there is none (WorkCondition).
func WorkStatus(conds []metav1.Condition, typ string, gen int64) metav1.ConditionStatus {
	return statusOf(WorkCondition(conds, typ, gen))
}

// ReportedGeneration is the generation of the work the agent last reported on (its Applied condition's),
// 0 when it has not reported.
func ReportedGeneration(conds []metav1.Condition) int64 {
	if c := meta.FindStatusCondition(conds, workv1.WorkApplied); c != nil {
		return c.ObservedGeneration
	}
	return 0
}

// Complete is the work's Complete condition, of whichever generation: a work that finished stays
// finished, and what deletes it after its TTL counts from when it turned True.
func Complete(conds []metav1.Condition) *metav1.Condition {
	return meta.FindStatusCondition(conds, workv1.WorkComplete)
}

// statusOf is the status of c, Unknown when there is none.
func statusOf(c *metav1.Condition) metav1.ConditionStatus {
	if c == nil {
		return metav1.ConditionUnknown
	}
	return c.Status
}
