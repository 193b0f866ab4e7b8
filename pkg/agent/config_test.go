package agent

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// Orphaning rules name objects exactly, as OCM's agent reads them.
func TestOrphaned(t *testing.T) {
	a := workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "ns", Name: "a"}
	selectively := func(rules ...workv1.OrphaningRule) *workv1.DeleteOption {
		return &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
			SelectivelyOrphan: &workv1.SelectivelyOrphan{OrphaningRules: rules}}
	}
	for _, tc := range []struct {
		name string
		opt  *workv1.DeleteOption
		want bool
	}{
		{"no delete option", nil, false},
		{"Foreground", &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeForeground}, false},
		{"Orphan", &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}, true},
		{"SelectivelyOrphan without rules", selectively(), false},
		{"SelectivelyOrphan naming it", selectively(workv1.OrphaningRule{Resource: "configmaps", Namespace: "ns", Name: "a"}), true},
		{"SelectivelyOrphan naming another", selectively(workv1.OrphaningRule{Resource: "configmaps", Namespace: "ns", Name: "b"}), false},
		{"SelectivelyOrphan with a star", selectively(workv1.OrphaningRule{Resource: "configmaps", Namespace: "ns", Name: "*"}), false},
	} {
		if got := orphaned(tc.opt, a); got != tc.want {
			t.Errorf("%s: orphaned = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Ferry's built-in Complete (Jobs, Pods) makes a work Complete only when every manifest is; a Complete
// rule the author wrote restores OCM's reading (every manifest that has the condition).
func TestBuiltInCompleteDoesNotFreezeAWorkOfMore(t *testing.T) {
	completeTrue := metav1.Condition{Type: workv1.ManifestComplete, Status: metav1.ConditionTrue}
	job := manifestResult{meta: workv1.ManifestResourceMeta{Kind: "Job", Namespace: "ns", Name: "migrate"}, health: []metav1.Condition{completeTrue}}
	deployment := manifestResult{meta: workv1.ManifestResourceMeta{Kind: "Deployment", Namespace: "ns", Name: "web"}}
	workComplete := func() []metav1.Condition {
		return []metav1.Condition{{Type: workv1.WorkComplete, Status: metav1.ConditionTrue, Reason: "ResourcesComplete"}}
	}
	if got := restrictBuiltInComplete(workComplete(), []manifestResult{job}); got[0].Status != metav1.ConditionTrue {
		t.Errorf("a work of a finished Job: %+v, want Complete", got[0])
	}
	got := restrictBuiltInComplete(workComplete(), []manifestResult{job, deployment})
	if got[0].Status != metav1.ConditionFalse || got[0].Message == "" {
		t.Errorf("a finished Job beside a Deployment: %+v, want not Complete, saying why", got[0])
	}
	ruled := job
	ruled.config = &workv1.ManifestConfigOption{ConditionRules: []workv1.ConditionRule{{Condition: workv1.ManifestComplete, Type: workv1.WellKnownConditionsType}}}
	if got := restrictBuiltInComplete(workComplete(), []manifestResult{ruled, deployment}); got[0].Status != metav1.ConditionTrue {
		t.Errorf("with the author's Complete rule: %+v, want OCM's reading (Complete)", got[0])
	}
}
