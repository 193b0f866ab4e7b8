package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
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

// Workloads on the spoke's kwok nodes reach their real health, as the agent reports it: a StatefulSet
// and a DaemonSet become Healthy (Progressing and Degraded False), a Job that completes is Complete and
// not Degraded, a Job whose pod fails is Degraded (and Complete: it will not run again), a custom
// resource without status conditions is Current, and WellKnownConditions under a name of the user's
// choosing follows the Job.
func TestWorkloadsReachTheirRealHealth(t *testing.T) {
	f := startAgent(t)
	const crd = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.health.ferry.io}
spec:
  group: health.ferry.io
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`
	podSpec := `{containers: [{name: main, image: busybox}]}`
	manifests := []string{
		namespaceManifest,
		`{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: db, namespace: "{{ns}}"}, spec: {replicas: 2, serviceName: db,
		  selector: {matchLabels: {app: db}}, template: {metadata: {labels: {app: db}}, spec: ` + podSpec + `}}}`,
		`{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: agent, namespace: "{{ns}}"}, spec: {
		  selector: {matchLabels: {app: agent}}, template: {metadata: {labels: {app: agent}}, spec: ` + podSpec + `}}}`,
		`{apiVersion: batch/v1, kind: Job, metadata: {name: once, namespace: "{{ns}}"}, spec: {backoffLimit: 0,
		  template: {spec: {restartPolicy: Never, containers: [{name: main, image: busybox}]}}}}`,
		// kwok fails a running pod that carries this label (internal/testing/localcluster/kwok).
		`{apiVersion: batch/v1, kind: Job, metadata: {name: fails, namespace: "{{ns}}"}, spec: {backoffLimit: 0,
		  template: {metadata: {labels: {pod-container-running-failed.stage.kwok.x-k8s.io: "true"}},
		  spec: {restartPolicy: Never, containers: [{name: main, image: busybox}]}}}}`,
		crd,
		`{apiVersion: health.ferry.io/v1, kind: Gadget, metadata: {name: g, namespace: "{{ns}}"}, spec: {size: 1}}`,
	}
	w := f.work("workloads-"+f.cluster, manifests...)
	w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{
		ResourceIdentifier: workv1.ResourceIdentifier{Group: "batch", Resource: "jobs", Namespace: f.cluster, Name: "once"},
		ConditionRules:     []workv1.ConditionRule{{Condition: "Finished", Type: workv1.WellKnownConditionsType}},
	}}
	f.create(w)
	want := []struct {
		ordinal int32
		what    string
		conds   map[string]metav1.ConditionStatus
	}{
		{1, "StatefulSet healthy", map[string]metav1.ConditionStatus{workv1.ManifestProgressing: metav1.ConditionFalse, workv1.ManifestDegraded: metav1.ConditionFalse}},
		{2, "DaemonSet healthy", map[string]metav1.ConditionStatus{workv1.ManifestProgressing: metav1.ConditionFalse, workv1.ManifestDegraded: metav1.ConditionFalse}},
		{3, "Job complete", map[string]metav1.ConditionStatus{workv1.ManifestComplete: metav1.ConditionTrue, workv1.ManifestDegraded: metav1.ConditionFalse, "Finished": metav1.ConditionTrue}},
		{4, "failed Job degraded", map[string]metav1.ConditionStatus{workv1.ManifestDegraded: metav1.ConditionTrue, workv1.ManifestComplete: metav1.ConditionTrue}},
		{6, "custom resource current", map[string]metav1.ConditionStatus{workv1.ManifestProgressing: metav1.ConditionFalse, workv1.ManifestDegraded: metav1.ConditionFalse}},
	}
	// Pods start, run and finish on kwok's schedule: allow more than the fixture's 30s.
	var got *workv1.ManifestWork
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		got, err = f.hub.WorkV1().ManifestWorks(f.cluster).Get(ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, m := range want {
			for typ, status := range m.conds {
				if c := manifestCondition(got, m.ordinal, typ); c == nil || c.Status != status {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		for _, m := range want {
			for typ := range m.conds {
				t.Logf("%s: manifest %d %s = %+v", m.what, m.ordinal, typ, manifestCondition(got, m.ordinal, typ))
			}
		}
		t.Fatalf("workloads did not reach their real health within 2 minutes: %v", err)
	}
}
