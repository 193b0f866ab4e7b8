package agent

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/workreport"
)

// Completion, as OCM's agent has it: a manifest whose Complete condition is True (a finished Job or
// Pod, or a conditionRule of type Complete) is no longer applied, so a Job cleaned up on the spoke
// after it finished is not created again; and a work whose Complete condition is True is not applied
// at all any more: it has done what it was for, and ferry-hub deletes it after its deleteOption's
// ttlSecondsAfterFinished.

// manifestComplete reports whether the work's status says the manifest's object is Complete. The
// manifest is found by its object, not its ordinal, so that a manifest moved within the work keeps it.
func manifestComplete(work *workv1.ManifestWork, m workv1.ManifestResourceMeta) bool {
	for _, old := range work.Status.ResourceStatus.Manifests {
		if workreport.SameObject(old.ResourceMeta, m) {
			return meta.IsStatusConditionTrue(old.Conditions, workv1.ManifestComplete)
		}
	}
	return false
}

// workComplete reports whether the work is Complete: nothing of it is applied any more.
func workComplete(work *workv1.ManifestWork) bool {
	return meta.IsStatusConditionTrue(work.Status.Conditions, workv1.WorkComplete)
}

// restrictBuiltInComplete keeps Ferry's built-in Complete verdict from freezing a work that is more
// than finished Jobs and Pods. OCM's work is Complete when every manifest that has a Complete condition
// has it True; there only a conditionRule the work's author wrote gives one. Ferry gives every Job and
// Pod one without a rule, so OCM's reading would stop applying a Deployment that stands beside a
// finished migration Job. So: when no manifest has a Complete rule of the author's, the work is
// Complete only when every one of its manifests is; with such a rule, OCM's reading holds as it is.
func restrictBuiltInComplete(conditions []metav1.Condition, results []manifestResult) []metav1.Condition {
	i := slices.IndexFunc(conditions, func(c metav1.Condition) bool { return c.Type == workv1.WorkComplete })
	if i < 0 || conditions[i].Status != metav1.ConditionTrue {
		return conditions
	}
	var without []string
	for k := range results {
		r := &results[k]
		if r.config != nil && slices.ContainsFunc(r.config.ConditionRules, func(rule workv1.ConditionRule) bool {
			return rule.Condition == workv1.ManifestComplete
		}) {
			return conditions
		}
		if !slices.ContainsFunc(r.health, func(c metav1.Condition) bool { return c.Type == workv1.ManifestComplete }) && !r.completed {
			without = append(without, describeManifest(r))
		}
	}
	if len(without) == 0 {
		return conditions
	}
	c := &conditions[i]
	c.Status, c.Reason = metav1.ConditionFalse, "ResourcesNotComplete"
	named := without
	if len(named) > 3 {
		named = append(slices.Clone(named[:3]), fmt.Sprintf("%d more", len(without)-3))
	}
	c.Message = fmt.Sprintf("%d of %d resources are not Complete (they never finish): %s", len(without), len(results), strings.Join(named, ", "))
	return conditions
}
