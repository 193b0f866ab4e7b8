package health

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"
)

func object(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	// Through JSON, as objects come from the API server: numbers are int64, not float64.
	data, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return u
}

func evaluator(t *testing.T) *Evaluator {
	t.Helper()
	return New()
}

type want struct {
	status metav1.ConditionStatus
	reason string
	// message, if set, must be in the condition's message
	message string
}

func check(t *testing.T, conds []metav1.Condition, wants map[string]want) {
	t.Helper()
	for typ, w := range wants {
		c := meta.FindStatusCondition(conds, typ)
		if c == nil {
			t.Errorf("no %s condition in %+v", typ, conds)
			continue
		}
		if c.Status != w.status || (w.reason != "" && c.Reason != w.reason) || !strings.Contains(c.Message, w.message) {
			t.Errorf("%s = %s/%s %q, want %s/%s containing %q", typ, c.Status, c.Reason, c.Message, w.status, w.reason, w.message)
		}
		if c.ObservedGeneration != 7 {
			t.Errorf("%s observedGeneration %d, want the work's 7", typ, c.ObservedGeneration)
		}
	}
	if len(conds) != len(wants) {
		t.Errorf("conditions %+v, want exactly %d", conds, len(wants))
	}
}

const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, generation: 2}
spec: {replicas: 2}
status:
  observedGeneration: 2
  replicas: 2
  updatedReplicas: 2
  readyReplicas: %s
  availableReplicas: %s
  conditions:
  - {type: Available, status: "%s"}
  - {type: Progressing, status: "%s", reason: %s}
`

func deploymentWith(t *testing.T, ready, progressing, reason string) *unstructured.Unstructured {
	available := "True"
	if ready != "2" {
		available = "False"
	}
	return object(t, sprintf(deployment, ready, ready, available, progressing, reason))
}

func sprintf(format string, args ...string) string {
	for _, a := range args {
		format = strings.Replace(format, "%s", a, 1)
	}
	return format
}

// A Deployment is Progressing until its replicas are ready, Degraded past its progress deadline (and
// Progressing still: not done, failed, as OCM's ManifestWorkReplicaSet rollout reads a failure), and
// neither once it is current.
func TestDeploymentHealthFollowsKstatus(t *testing.T) {
	e := evaluator(t)
	check(t, e.Conditions(deploymentWith(t, "1", "True", "ReplicaSetUpdated"), nil, 7), map[string]want{
		workv1.ManifestProgressing: {metav1.ConditionTrue, ReasonInProgress, "Available: 1/2"},
		workv1.ManifestDegraded:    {metav1.ConditionFalse, ReasonInProgress, ""},
	})
	check(t, e.Conditions(deploymentWith(t, "2", "True", "NewReplicaSetAvailable"), nil, 7), map[string]want{
		workv1.ManifestProgressing: {metav1.ConditionFalse, ReasonCurrent, ""},
		workv1.ManifestDegraded:    {metav1.ConditionFalse, ReasonCurrent, ""},
	})
	check(t, e.Conditions(deploymentWith(t, "0", "False", "ProgressDeadlineExceeded"), nil, 7), map[string]want{
		workv1.ManifestProgressing: {metav1.ConditionTrue, ReasonFailed, "Progress deadline exceeded"},
		workv1.ManifestDegraded:    {metav1.ConditionTrue, ReasonFailed, "Progress deadline exceeded"},
	})
}

// The CEL environments are built by the first expression compiled, not before: an agent whose works
// carry no conditionRules, Jobs or Pods never holds them.
func TestCELEnvironmentWaitsForTheFirstExpression(t *testing.T) {
	e := evaluator(t)
	e.Conditions(deploymentWith(t, "2", "True", "NewReplicaSetAvailable"), nil, 7)
	if e.programs.env != nil || e.programs.msgEnv != nil {
		t.Fatal("the CEL environments were built for a Deployment without conditionRules")
	}
	job := object(t, `{apiVersion: batch/v1, kind: Job, metadata: {name: once, namespace: default, generation: 1}, status: {conditions: [{type: Complete, status: "True"}]}}`)
	check(t, e.Conditions(job, nil, 7), map[string]want{
		workv1.ManifestProgressing: {metav1.ConditionFalse, ReasonCurrent, ""},
		workv1.ManifestDegraded:    {metav1.ConditionFalse, ReasonCurrent, ""},
		workv1.ManifestComplete:    {metav1.ConditionTrue, workv1.ConditionRuleEvaluated, "Job is finished"},
	})
	if e.programs.env == nil || e.programs.msgEnv == nil {
		t.Fatal("a Job's Complete was evaluated without the CEL environments")
	}
}

// A Job is Complete once it finished, and Degraded when it failed; a Pod is Complete in a final
// phase.
func TestJobsAndPodsGetComplete(t *testing.T) {
	e := evaluator(t)
	job := `
apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: default, generation: 1}
spec: {}
status:
  conditions:
  - {type: %s, status: "True"}
`
	check(t, e.Conditions(object(t, sprintf(job, "Complete")), nil, 7), map[string]want{
		workv1.ManifestProgressing: {metav1.ConditionFalse, ReasonCurrent, ""},
		workv1.ManifestDegraded:    {metav1.ConditionFalse, ReasonCurrent, ""},
		workv1.ManifestComplete:    {metav1.ConditionTrue, workv1.ConditionRuleEvaluated, "Job is finished"},
	})
	check(t, e.Conditions(object(t, sprintf(job, "Failed")), nil, 7), map[string]want{
		workv1.ManifestProgressing: {metav1.ConditionTrue, ReasonFailed, ""},
		workv1.ManifestDegraded:    {metav1.ConditionTrue, ReasonFailed, ""},
		workv1.ManifestComplete:    {metav1.ConditionTrue, workv1.ConditionRuleEvaluated, "Job is finished"},
	})
	running := object(t, "{apiVersion: batch/v1, kind: Job, metadata: {name: j, generation: 1}, spec: {}, status: {active: 1}}")
	check(t, e.Conditions(running, nil, 7), map[string]want{
		workv1.ManifestProgressing: {metav1.ConditionTrue, ReasonInProgress, ""},
		workv1.ManifestDegraded:    {metav1.ConditionFalse, ReasonInProgress, ""},
		workv1.ManifestComplete:    {metav1.ConditionFalse, workv1.ConditionRuleEvaluated, "Job is not finished"},
	})
	pod := object(t, "{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Succeeded}}")
	c := meta.FindStatusCondition(e.Conditions(pod, nil, 7), workv1.ManifestComplete)
	if c == nil || c.Status != metav1.ConditionTrue || c.Message != "Pod is in phase Succeeded" {
		t.Errorf("a succeeded Pod: Complete %+v", c)
	}
}

// conditionRules: a CEL rule sets its condition with its message; a rule for a built-in type replaces
// the verdict; a rule that does not compile, or does not give a bool, is False with
// ConditionRuleExpressionError naming the expression; WellKnownConditions on a kind it does not cover
// is ConditionRuleInvalid.
func TestConditionRules(t *testing.T) {
	e := evaluator(t)
	cm := object(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: d}, data: {mode: ready, size: '3'}}")
	rules := []workv1.ConditionRule{
		{Condition: "Ready", Type: workv1.CelConditionExpressionsType, CelExpressions: []string{"object.data.mode == 'ready'", "int(object.data.size) > 2"},
			MessageExpression: `result ? "mode is " + object.data.mode : "not ready"`},
		{Condition: "Big", Type: workv1.CelConditionExpressionsType, CelExpressions: []string{"int(object.data.size) > 10"}, Message: "size over 10"},
		{Condition: workv1.ManifestDegraded, Type: workv1.CelConditionExpressionsType, CelExpressions: []string{"object.data.mode != 'ready'"}},
		{Condition: "Broken", Type: workv1.CelConditionExpressionsType, CelExpressions: []string{"object.data.mode =="}},
		{Condition: "NotBool", Type: workv1.CelConditionExpressionsType, CelExpressions: []string{"object.data.mode"}},
		{Condition: "Missing", Type: workv1.CelConditionExpressionsType, CelExpressions: []string{"object.data.absent == 'x'"}},
		{Condition: workv1.ManifestComplete, Type: workv1.WellKnownConditionsType},
	}
	check(t, e.Conditions(cm, rules, 7), map[string]want{
		workv1.ManifestProgressing: {metav1.ConditionFalse, ReasonCurrent, ""},
		"Ready":                    {metav1.ConditionTrue, workv1.ConditionRuleEvaluated, "mode is ready"},
		"Big":                      {metav1.ConditionFalse, workv1.ConditionRuleEvaluated, "size over 10"},
		workv1.ManifestDegraded:    {metav1.ConditionFalse, workv1.ConditionRuleEvaluated, "Manifest is not Degraded"},
		"Broken":                   {metav1.ConditionFalse, workv1.ConditionRuleExpressionError, `expression "object.data.mode =="`},
		"NotBool":                  {metav1.ConditionFalse, workv1.ConditionRuleExpressionError, "want a bool"},
		"Missing":                  {metav1.ConditionFalse, workv1.ConditionRuleExpressionError, "no such key"},
		workv1.ManifestComplete:    {metav1.ConditionUnknown, workv1.ConditionRuleInvalid, "WellKnownConditions covers"},
	})
}

// A rule that would cost more than the API server allows one expression is stopped, not run.
func TestConditionRuleCostLimit(t *testing.T) {
	e := evaluator(t)
	cm := object(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: b}}")
	rule := workv1.ConditionRule{Condition: "Expensive", Type: workv1.CelConditionExpressionsType,
		CelExpressions: []string{"[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, a+b+c+d+e+f > 0))))))"}}
	c := meta.FindStatusCondition(e.Conditions(cm, []workv1.ConditionRule{rule}, 7), "Expensive")
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != workv1.ConditionRuleExpressionError || !strings.Contains(c.Message, "cost") {
		t.Errorf("an expression over the cost limit: %+v", c)
	}
}

// The work's conditions: Progressing/Degraded when any manifest is, Complete when all that have it
// are, Unknown over the quiet value; the message names a few and counts the rest.
func TestAggregate(t *testing.T) {
	m := func(name string, conds ...metav1.Condition) workv1.ManifestCondition {
		return workv1.ManifestCondition{ResourceMeta: workv1.ManifestResourceMeta{Kind: "Deployment", Namespace: "d", Name: name}, Conditions: conds}
	}
	cond := func(typ string, s metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: ReasonCurrent}
	}
	var manifests []workv1.ManifestCondition
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		manifests = append(manifests, m(n, cond(workv1.ManifestProgressing, metav1.ConditionTrue), cond(workv1.ManifestDegraded, metav1.ConditionFalse)))
	}
	manifests = append(manifests, m("f", cond(workv1.ManifestProgressing, metav1.ConditionFalse), cond(workv1.ManifestDegraded, metav1.ConditionUnknown),
		cond(workv1.ManifestComplete, metav1.ConditionTrue), cond(workv1.ManifestApplied, metav1.ConditionTrue)))
	got := Aggregate(manifests, 7)
	check(t, got, map[string]want{
		workv1.ManifestProgressing: {metav1.ConditionTrue, "ResourcesProgressing", "5 of 6 resources are Progressing: Deployment d/a, Deployment d/b, Deployment d/c and 2 more"},
		workv1.ManifestDegraded:    {metav1.ConditionUnknown, "ResourcesStatusUnknown", "Deployment d/f"},
		workv1.ManifestComplete:    {metav1.ConditionTrue, "ResourcesComplete", "1 of 1"},
	})
}
