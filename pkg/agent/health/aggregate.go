package health

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// IsHealthCondition says whether a manifest's condition is one this package sets: a built-in verdict
// or a rule's (OCM marks those by the reason prefix "ConditionRule").
func IsHealthCondition(c metav1.Condition) bool {
	switch c.Type {
	case workv1.ManifestProgressing, workv1.ManifestDegraded, workv1.ManifestComplete:
		return true
	}
	return strings.HasPrefix(c.Reason, "ConditionRule")
}

// Aggregate folds the manifests' health conditions into the work's: for each condition type some
// manifest has, one work condition. Progressing and Degraded are True when any manifest's is (a work
// is progressing while one of its objects is); every other type (Complete, rules' own) is True when
// every manifest that has it is. Either way Unknown wins over the other value, and the message names
// the manifests that decide it (a few, and how many more).
func Aggregate(manifests []workv1.ManifestCondition, generation int64) []metav1.Condition {
	var typesSeen []string
	for _, m := range manifests {
		for _, c := range m.Conditions {
			if IsHealthCondition(c) && !slices.Contains(typesSeen, c.Type) {
				typesSeen = append(typesSeen, c.Type)
			}
		}
	}
	slices.Sort(typesSeen)
	var out []metav1.Condition
	for _, t := range typesSeen {
		anyTrue := t == workv1.ManifestProgressing || t == workv1.ManifestDegraded
		byStatus := map[metav1.ConditionStatus][]string{}
		total := 0
		for _, m := range manifests {
			if c := meta.FindStatusCondition(m.Conditions, t); c != nil && IsHealthCondition(*c) {
				byStatus[c.Status] = append(byStatus[c.Status], describe(m.ResourceMeta))
				total++
			}
		}
		c := metav1.Condition{Type: t, ObservedGeneration: generation}
		decisive := metav1.ConditionFalse // what makes the work's condition differ from the quiet value
		quiet := metav1.ConditionTrue
		if anyTrue {
			decisive, quiet = metav1.ConditionTrue, metav1.ConditionFalse
		}
		switch {
		case len(byStatus[decisive]) > 0:
			c.Status = decisive
			c.Message = fmt.Sprintf("%d of %d resources are %s%s: %s", len(byStatus[decisive]), total, negation(decisive), t, someOf(byStatus[decisive]))
		case len(byStatus[metav1.ConditionUnknown]) > 0:
			c.Status = metav1.ConditionUnknown
			c.Message = fmt.Sprintf("%d of %d resources have an unknown %s: %s", len(byStatus[metav1.ConditionUnknown]), total, t, someOf(byStatus[metav1.ConditionUnknown]))
		default:
			c.Status = quiet
			c.Message = fmt.Sprintf("%d of %d resources are %s%s", total, total, negation(quiet), t)
		}
		switch c.Status {
		case metav1.ConditionTrue:
			c.Reason = "Resources" + t
		case metav1.ConditionFalse:
			c.Reason = "ResourcesNot" + t
		default:
			c.Reason = "ResourcesStatusUnknown"
		}
		out = append(out, c)
	}
	return out
}

func negation(s metav1.ConditionStatus) string {
	if s == metav1.ConditionFalse {
		return "not "
	}
	return ""
}

func describe(m workv1.ManifestResourceMeta) string {
	name := m.Name
	if m.Namespace != "" {
		name = m.Namespace + "/" + name
	}
	return m.Kind + " " + name
}

// someOf names up to three of names, and counts the rest: a work condition's message stays short
// however many manifests the work holds.
func someOf(names []string) string {
	const shown = 3
	if len(names) <= shown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:shown], ", "), len(names)-shown)
}
