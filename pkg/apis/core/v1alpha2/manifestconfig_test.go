package v1alpha2

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	workv1 "open-cluster-management.io/api/work/v1"
)

// manifestConfigs are read as OCM's agent reads them (its FindManifestConfiguration): group and resource
// exactly, "*" in name and namespace, and of several matching entries the first to set each of
// updateStrategy, feedbackRules and conditionRules gives it; feedbackScrapeType is the last entry's.
func TestManifestConfigForMatchesAsOCM(t *testing.T) {
	cm := workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "testns", Name: "test"}
	id := func(ns, name string) workv1.ResourceIdentifier {
		return workv1.ResourceIdentifier{Resource: "configmaps", Namespace: ns, Name: name}
	}
	strategy := func(s workv1.UpdateStrategyType) *workv1.UpdateStrategy { return &workv1.UpdateStrategy{Type: s} }
	status := []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}}
	paths := []workv1.FeedbackRule{{Type: workv1.JSONPathsType}}
	complete := []workv1.ConditionRule{{Type: workv1.WellKnownConditionsType, Condition: workv1.ManifestComplete}}
	for _, tc := range []struct {
		name    string
		configs []workv1.ManifestConfigOption
		want    *workv1.ManifestConfigOption
	}{
		{name: "no configs"},
		{name: "none matches", configs: []workv1.ManifestConfigOption{
			{ResourceIdentifier: workv1.ResourceIdentifier{Resource: "nodes", Name: "node1"}, UpdateStrategy: strategy(workv1.UpdateStrategyTypeReadOnly)},
			{ResourceIdentifier: id("testns", "test1"), UpdateStrategy: strategy(workv1.UpdateStrategyTypeReadOnly)},
			{ResourceIdentifier: workv1.ResourceIdentifier{Group: "apps", Resource: "configmaps", Namespace: "testns", Name: "test"}, UpdateStrategy: strategy(workv1.UpdateStrategyTypeReadOnly)},
		}},
		{name: "a match that sets nothing", configs: []workv1.ManifestConfigOption{{ResourceIdentifier: id("test*", "*")}}},
		{name: "exact", configs: []workv1.ManifestConfigOption{{ResourceIdentifier: cm, FeedbackRules: status}},
			want: &workv1.ManifestConfigOption{ResourceIdentifier: cm, FeedbackRules: status}},
		{name: "wildcards", configs: []workv1.ManifestConfigOption{
			{ResourceIdentifier: id("test*", "*"), FeedbackRules: status, ConditionRules: complete, UpdateStrategy: strategy(workv1.UpdateStrategyTypeReadOnly)},
		}, want: &workv1.ManifestConfigOption{ResourceIdentifier: cm, FeedbackRules: status, ConditionRules: complete, UpdateStrategy: strategy(workv1.UpdateStrategyTypeReadOnly)}},
		{name: "merged, first wins per field", configs: []workv1.ManifestConfigOption{
			{ResourceIdentifier: id("test*", "test"), FeedbackRules: status},
			{ResourceIdentifier: workv1.ResourceIdentifier{Resource: "nodes", Name: "node1"}},
			{ResourceIdentifier: cm, FeedbackRules: paths},
			{ResourceIdentifier: id("testns", "*"), UpdateStrategy: strategy(workv1.UpdateStrategyTypeUpdate), FeedbackScrapeType: workv1.FeedbackWatchType},
			{ResourceIdentifier: id("testns", "*"), UpdateStrategy: strategy(workv1.UpdateStrategyTypeCreateOnly), FeedbackScrapeType: workv1.FeedbackPollType},
		}, want: &workv1.ManifestConfigOption{ResourceIdentifier: cm, FeedbackRules: status, UpdateStrategy: strategy(workv1.UpdateStrategyTypeUpdate), FeedbackScrapeType: workv1.FeedbackPollType}},
		{name: "a star inside a name", configs: []workv1.ManifestConfigOption{
			{ResourceIdentifier: id("*ns", "t*t"), UpdateStrategy: strategy(workv1.UpdateStrategyTypeServerSideApply)},
		}, want: &workv1.ManifestConfigOption{ResourceIdentifier: cm, UpdateStrategy: strategy(workv1.UpdateStrategyTypeServerSideApply)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ManifestConfigFor(tc.configs, cm); !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("ManifestConfigFor = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestWildcardMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"", "", true}, {"", "a", false}, {"a", "a", true}, {"a", "ab", false},
		{"*", "", true}, {"*", "anything", true},
		{"test*", "testns", true}, {"test*", "test", true}, {"test*", "atest", false},
		{"*ns", "testns", true}, {"*ns", "nsx", false},
		{"a*b*c", "abc", true}, {"a*b*c", "aXbYc", true}, {"a*b*c", "acb", false}, {"a*c*c", "ac", false},
		{"a.b", "axb", false}, {"a.*", "a.b", true}, // no regular expression but "*"
		{"**", "x", true},
	} {
		if got := wildcardMatch(tc.pattern, tc.s); got != tc.want {
			t.Errorf("wildcardMatch(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}
