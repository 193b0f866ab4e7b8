package agent_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/agent/health"
)

// Every applied object gets a health verdict on the hub, and its conditionRules their conditions:
//   - a Deployment whose pods no node can take (a nodeSelector nothing matches) is Progressing, with
//     kstatus's message;
//   - a ConfigMap is Current: neither Progressing nor Degraded;
//   - a CEL rule on the ConfigMap's data follows a change someone makes on the spoke (a field the
//     manifest does not set, so Update leaves it), through the agent's watch, not a resync;
//   - a rule that does not compile is False, ConditionRuleExpressionError, naming the expression;
//   - the work's Progressing says which object is progressing.
func TestHealthAndConditionRulesReachTheHub(t *testing.T) {
	f := startAgent(t) // status resync every minute: only the watch can bring the rule's change in time
	unschedulable := strings.Replace(deploymentWeb, "containers:", "nodeSelector: {ferry.io/test-no-such-node: \"true\"}\n      containers:", 1)
	w := f.work("health-"+f.cluster, namespaceManifest, unschedulable, configMapA)
	w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{
		ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: f.cluster, Name: "a"},
		ConditionRules: []workv1.ConditionRule{
			{Condition: "Ready", Type: workv1.CelConditionExpressionsType, CelExpressions: []string{"has(object.data.mode) && object.data.mode == 'ready'"},
				MessageExpression: `result ? "mode is " + object.data.mode : "waiting for data.mode"`},
			{Condition: "Broken", Type: workv1.CelConditionExpressionsType, CelExpressions: []string{"object.data.k =="}},
		},
	}}
	f.create(w)
	cond := func(w *workv1.ManifestWork, ordinal int32, typ string) *metav1.Condition {
		return manifestCondition(w, ordinal, typ)
	}
	got := f.waitWork(w.Name, "health on every manifest", func(w *workv1.ManifestWork) bool {
		return allApplied(w) && cond(w, 1, workv1.ManifestProgressing) != nil && cond(w, 2, "Ready") != nil
	})
	if c := cond(got, 1, workv1.ManifestProgressing); c == nil || c.Status != metav1.ConditionTrue || c.Reason != health.ReasonInProgress || c.Message == "" {
		t.Errorf("the Deployment no node runs: Progressing %s/%s %q, want True/%s with kstatus's message", c.Status, c.Reason, c.Message, health.ReasonInProgress)
	}
	for _, typ := range []string{workv1.ManifestProgressing, workv1.ManifestDegraded} {
		if c := cond(got, 2, typ); c == nil || c.Status != metav1.ConditionFalse || c.Reason != health.ReasonCurrent {
			t.Errorf("the ConfigMap's %s: %+v, want False/%s", typ, c, health.ReasonCurrent)
		}
	}
	if c := cond(got, 2, "Ready"); c.Status != metav1.ConditionFalse || c.Message != "waiting for data.mode" || c.ObservedGeneration != got.Generation {
		t.Errorf("rule Ready before the change: %+v", c)
	}
	if c := cond(got, 2, "Broken"); c == nil || c.Status != metav1.ConditionFalse || c.Reason != workv1.ConditionRuleExpressionError || !strings.Contains(c.Message, `"object.data.k =="`) {
		t.Errorf("a rule that does not compile: %+v", c)
	}
	if !workCondition(got, workv1.WorkProgressing, metav1.ConditionTrue) {
		t.Errorf("the work's conditions %+v: want Progressing True", got.Status.Conditions)
	}
	if c := findWorkCondition(got, workv1.WorkProgressing); c == nil || !strings.Contains(c.Message, "Deployment "+f.cluster+"/web") {
		t.Errorf("the work's Progressing does not name the Deployment: %+v", c)
	}

	// Someone sets data.mode on the spoke.
	patch := []byte(`{"data":{"mode":"ready"}}`)
	if _, err := f.kube.CoreV1().ConfigMaps(f.cluster).Patch(t.Context(), "a", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitWork(w.Name, "rule Ready True after the spoke's change", func(w *workv1.ManifestWork) bool {
		c := cond(w, 2, "Ready")
		return c != nil && c.Status == metav1.ConditionTrue && c.Message == "mode is ready"
	})

	// Dropping the rules drops their conditions.
	f.update(w.Name, func(w *workv1.ManifestWork) { w.Spec.ManifestConfigs = nil })
	f.eventually("rule conditions gone with their rules", func(ctx context.Context) (bool, error) {
		w, err := f.hub.WorkV1().ManifestWorks(f.cluster).Get(ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return cond(w, 2, "Ready") == nil && cond(w, 2, "Broken") == nil && cond(w, 2, workv1.ManifestProgressing) != nil, nil
	})
}

func findWorkCondition(w *workv1.ManifestWork, typ string) *metav1.Condition {
	for i := range w.Status.Conditions {
		if w.Status.Conditions[i].Type == typ {
			return &w.Status.Conditions[i]
		}
	}
	return nil
}
