package v1alpha2

import (
	"strings"

	workv1 "open-cluster-management.io/api/work/v1"
)

// ManifestConfigFor is what a work's manifestConfigs say of the object id names, read as OCM's work
// agent reads them (its FindManifestConfiguration): each entry's resourceIdentifier names objects by
// group and resource exactly and by namespace and name as patterns in which "*" stands for any run of
// characters; of the entries that match, in order, the first that sets each of updateStrategy,
// feedbackRules and conditionRules gives it, while feedbackScrapeType is the last matching entry's. nil
// when no entry sets anything. ferry-agent applies by it and `kubectl ferry` shows it, so that what is
// shown is what is applied.
func ManifestConfigFor(configs []workv1.ManifestConfigOption, id workv1.ResourceIdentifier) *workv1.ManifestConfigOption {
	var out *workv1.ManifestConfigOption
	for i := range configs {
		c := &configs[i]
		if !Identifies(c.ResourceIdentifier, id) {
			continue
		}
		if out == nil {
			out = &workv1.ManifestConfigOption{ResourceIdentifier: id}
		}
		if out.UpdateStrategy == nil {
			out.UpdateStrategy = c.UpdateStrategy
		}
		if len(out.FeedbackRules) == 0 {
			out.FeedbackRules = c.FeedbackRules
		}
		if len(out.ConditionRules) == 0 {
			out.ConditionRules = c.ConditionRules
		}
		out.FeedbackScrapeType = c.FeedbackScrapeType
	}
	if out == nil || (out.UpdateStrategy == nil && len(out.FeedbackRules) == 0 && len(out.ConditionRules) == 0) {
		return nil
	}
	return out
}

// Identifies reports whether a manifestConfigs resourceIdentifier (pattern) names the object id.
func Identifies(pattern, id workv1.ResourceIdentifier) bool {
	return pattern.Group == id.Group && pattern.Resource == id.Resource &&
		wildcardMatch(pattern.Namespace, id.Namespace) && wildcardMatch(pattern.Name, id.Name)
}

// wildcardMatch reports whether s matches pattern, in which each "*" stands for any run of characters
// (none included) and everything else for itself.
func wildcardMatch(pattern, s string) bool {
	if !strings.Contains(pattern, "*") {
		return pattern == s
	}
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}
