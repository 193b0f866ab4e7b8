package health

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// Reasons of the built-in verdicts, from kstatus's status of the object. Rules use OCM's reasons
// (workv1.ConditionRuleEvaluated and the rest).
const (
	ReasonInProgress    = "ResourceInProgress"
	ReasonCurrent       = "ResourceCurrent"
	ReasonFailed        = "ResourceFailed"
	ReasonTerminating   = "ResourceTerminating"
	ReasonStatusUnknown = "ResourceStatusUnknown"
)

// Evaluator computes health conditions. It is safe for concurrent use; it keeps compiled CEL
// programs.
type Evaluator struct {
	programs *programs
}

// New returns an Evaluator.
func New() *Evaluator {
	return &Evaluator{programs: newPrograms()}
}

// wellKnownComplete are OCM's WellKnownConditions: when a Job or a Pod is Complete. A failed Job or
// Pod is complete too (it will not run again); Degraded tells the two apart.
var wellKnownComplete = map[schema.GroupVersionKind]workv1.ConditionRule{
	{Group: "batch", Version: "v1", Kind: "Job"}: {
		Condition: workv1.ManifestComplete, Type: workv1.CelConditionExpressionsType,
		CelExpressions:    []string{`hasConditions(object.status) ? object.status.conditions.exists(c, (c.type == 'Complete' || c.type == 'Failed') && c.status == 'True') : false`},
		MessageExpression: `result ? "Job is finished" : "Job is not finished"`,
	},
	{Group: "", Version: "v1", Kind: "Pod"}: {
		Condition: workv1.ManifestComplete, Type: workv1.CelConditionExpressionsType,
		CelExpressions:    []string{`has(object.status) && has(object.status.phase) && object.status.phase in ['Succeeded', 'Failed']`},
		MessageExpression: `"Pod is in phase " + (has(object.status) && has(object.status.phase) ? object.status.phase : "Unknown")`,
	},
}

// Conditions are the health conditions of obj, as it is on the cluster now, under the manifest's
// conditionRules: Progressing and Degraded from kstatus, Complete for Jobs and Pods, then each rule's
// condition, which replaces a built-in one of the same type. Each carries generation, the work's, as
// its observedGeneration.
func (e *Evaluator) Conditions(obj *unstructured.Unstructured, rules []workv1.ConditionRule, generation int64) []metav1.Condition {
	out := builtIn(obj)
	if rule, ok := wellKnownComplete[obj.GroupVersionKind()]; ok {
		out = append(out, e.evaluate(obj, rule))
	}
	for _, rule := range rules {
		c := e.evaluateRule(obj, rule)
		replaced := false
		for i := range out {
			if out[i].Type == c.Type {
				out[i], replaced = c, true
			}
		}
		if !replaced {
			out = append(out, c)
		}
	}
	for i := range out {
		out[i].ObservedGeneration = generation
	}
	return out
}

// builtIn are Progressing and Degraded from kstatus.
func builtIn(obj *unstructured.Unstructured) []metav1.Condition {
	progressing := metav1.Condition{Type: workv1.ManifestProgressing}
	degraded := metav1.Condition{Type: workv1.ManifestDegraded}
	res, err := status.Compute(obj)
	if err != nil {
		msg := fmt.Sprintf("kstatus could not read the object's status: %v", err)
		progressing.Status, progressing.Reason, progressing.Message = metav1.ConditionUnknown, ReasonStatusUnknown, msg
		degraded.Status, degraded.Reason, degraded.Message = metav1.ConditionUnknown, ReasonStatusUnknown, msg
		return []metav1.Condition{progressing, degraded}
	}
	msg := res.Message
	if msg == "" {
		msg = string(res.Status)
	}
	progressing.Message, degraded.Message = msg, msg
	switch res.Status {
	case status.InProgressStatus:
		progressing.Status, progressing.Reason = metav1.ConditionTrue, ReasonInProgress
		degraded.Status, degraded.Reason = metav1.ConditionFalse, ReasonInProgress
	case status.TerminatingStatus:
		progressing.Status, progressing.Reason = metav1.ConditionTrue, ReasonTerminating
		degraded.Status, degraded.Reason = metav1.ConditionFalse, ReasonTerminating
	case status.FailedStatus:
		// Not done, and failed: Progressing stays True beside Degraded. OCM's hub reads the two so
		// (its ManifestWorkReplicaSet rollout counts a cluster failed when its work is Progressing and
		// Degraded, and succeeded as soon as Progressing is False), and a failed Deployment counted as
		// succeeded would be rolled on to the next clusters.
		progressing.Status, progressing.Reason = metav1.ConditionTrue, ReasonFailed
		degraded.Status, degraded.Reason = metav1.ConditionTrue, ReasonFailed
	case status.CurrentStatus:
		progressing.Status, progressing.Reason = metav1.ConditionFalse, ReasonCurrent
		degraded.Status, degraded.Reason = metav1.ConditionFalse, ReasonCurrent
	default:
		progressing.Status, progressing.Reason = metav1.ConditionUnknown, ReasonStatusUnknown
		degraded.Status, degraded.Reason = metav1.ConditionUnknown, ReasonStatusUnknown
	}
	return []metav1.Condition{progressing, degraded}
}

// evaluateRule is the condition one of the manifest's conditionRules gives, as OCM's work agent
// gives it.
func (e *Evaluator) evaluateRule(obj *unstructured.Unstructured, rule workv1.ConditionRule) metav1.Condition {
	switch rule.Type {
	case workv1.CelConditionExpressionsType:
		return e.evaluate(obj, rule)
	case workv1.WellKnownConditionsType:
		known, ok := wellKnownComplete[obj.GroupVersionKind()]
		if !ok {
			condition := rule.Condition
			if condition == "" {
				condition = workv1.ManifestComplete
			}
			return metav1.Condition{Type: condition, Status: metav1.ConditionUnknown, Reason: workv1.ConditionRuleInvalid,
				Message: fmt.Sprintf("no well-known conditions for %s; WellKnownConditions covers batch/v1 Job and v1 Pod", obj.GroupVersionKind())}
		}
		if rule.Condition != "" {
			known.Condition = rule.Condition
		}
		if rule.Message != "" {
			known.Message = rule.Message
		}
		if rule.MessageExpression != "" {
			known.MessageExpression = rule.MessageExpression
		}
		return e.evaluate(obj, known)
	default:
		return metav1.Condition{Type: rule.Condition, Status: metav1.ConditionUnknown, Reason: workv1.ConditionRuleInvalid,
			Message: fmt.Sprintf("condition rule type %q: want CEL or WellKnownConditions", rule.Type)}
	}
}

// evaluate gives a CEL rule's condition: True when every expression is true, False at the first
// that is not; a rule that does not compile or evaluate is False with ConditionRuleExpressionError
// and a message naming the expression.
func (e *Evaluator) evaluate(obj *unstructured.Unstructured, rule workv1.ConditionRule) metav1.Condition {
	c := metav1.Condition{Type: rule.Condition, Status: metav1.ConditionTrue, Reason: workv1.ConditionRuleEvaluated}
	for _, expr := range rule.CelExpressions {
		ok, err := e.programs.evalBool(expr, obj.Object)
		if err != nil {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, workv1.ConditionRuleExpressionError, fmt.Sprintf("expression %q: %v", expr, err)
			return c
		}
		if !ok {
			c.Status = metav1.ConditionFalse
			break
		}
	}
	result := c.Status == metav1.ConditionTrue
	if rule.MessageExpression != "" {
		msg, err := e.programs.evalMessage(rule.MessageExpression, obj.Object, result)
		if err != nil {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, workv1.ConditionRuleExpressionError, fmt.Sprintf("messageExpression %q: %v", rule.MessageExpression, err)
			return c
		}
		if msg != "" {
			c.Message = msg
			return c
		}
	}
	switch {
	case rule.Message != "":
		c.Message = rule.Message
	case result:
		c.Message = "Manifest is " + rule.Condition
	default:
		c.Message = "Manifest is not " + rule.Condition
	}
	return c
}
