package feedback_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/pkg/agent/feedback"
)

// object decodes a YAML manifest the way the dynamic client decodes a live object: whole numbers become
// int64, others float64.
func object(t testing.TB, manifest string) *unstructured.Unstructured {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatalf("manifest is not YAML: %v", err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(js); err != nil {
		t.Fatalf("manifest is not an object: %v", err)
	}
	return obj
}

// show renders values as "name=Type:value" so a mismatch reads plainly; every set field is shown, so a
// value carrying more than its own type's field does not compare equal.
func show(values []workv1.FeedbackValue) []string {
	out := []string{}
	for _, v := range values {
		var fields []string
		if v.Value.Integer != nil {
			fields = append(fields, fmt.Sprint(*v.Value.Integer))
		}
		if v.Value.String != nil {
			fields = append(fields, fmt.Sprintf("%q", *v.Value.String))
		}
		if v.Value.Boolean != nil {
			fields = append(fields, fmt.Sprint(*v.Value.Boolean))
		}
		if v.Value.JsonRaw != nil {
			fields = append(fields, *v.Value.JsonRaw)
		}
		out = append(out, fmt.Sprintf("%s=%s:%s", v.Name, v.Value.Type, strings.Join(fields, "|")))
	}
	return out
}

func wellKnownRule() []workv1.FeedbackRule {
	return []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}}
}

func jsonPaths(paths ...string) []workv1.FeedbackRule {
	rule := workv1.FeedbackRule{Type: workv1.JSONPathsType}
	for i := 0; i+1 < len(paths); i += 2 {
		rule.JsonPaths = append(rule.JsonPaths, workv1.JsonPath{Name: paths[i], Path: paths[i+1]})
	}
	return []workv1.FeedbackRule{rule}
}

// ruleErrors unpacks the joined error into its RuleErrors, failing on anything else in it.
func ruleErrors(t *testing.T, err error) []*feedback.RuleError {
	t.Helper()
	if err == nil {
		return nil
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("error %v is not a join of rule errors", err)
	}
	var out []*feedback.RuleError
	for _, e := range joined.Unwrap() {
		var re *feedback.RuleError
		if !errors.As(e, &re) {
			t.Fatalf("error %v is not a *RuleError", e)
		}
		out = append(out, re)
	}
	return out
}

func expectValues(t *testing.T, got []workv1.FeedbackValue, want []string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if g := show(got); !reflect.DeepEqual(g, want) {
		t.Errorf("values:\n got  %q\n want %q", g, want)
	}
}

const deploymentYAML = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec: {replicas: 3}
status:
  observedGeneration: 4
  replicas: 3
  readyReplicas: 2
  availableReplicas: 1
  updatedReplicas: 3
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}
`

func TestWellKnownStatusReportsEachKindsFields(t *testing.T) {
	cases := []struct {
		name     string
		manifest string
		want     []string
		wantErr  error
	}{
		{
			name:     "deployment reports ready, total and available replicas in OCM's order",
			manifest: deploymentYAML,
			want:     []string{"ReadyReplicas=Integer:2", "Replicas=Integer:3", "AvailableReplicas=Integer:1"},
		},
		{
			name: "deployment without available replicas yet omits that value",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
status: {replicas: 1, readyReplicas: 0}`,
			want: []string{"ReadyReplicas=Integer:0", "Replicas=Integer:1"},
		},
		{
			name: "deployment without status reports nothing and no error",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {replicas: 1}`,
		},
		{
			name: "completed job reports the Complete condition and the succeeded count",
			manifest: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
status:
  succeeded: 1
  conditions:
  - {type: SuccessCriteriaMet, status: "True"}
  - {type: Complete, status: "True"}`,
			want: []string{`JobComplete=String:"True"`, "JobSucceeded=Integer:1"},
		},
		{
			name: "running job has no Complete condition so only reports what exists",
			manifest: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
status: {active: 1, succeeded: 0}`,
			want: []string{"JobSucceeded=Integer:0"},
		},
		{
			name: "pod reports the Ready condition and the phase",
			manifest: `
apiVersion: v1
kind: Pod
metadata: {name: web-0}
status:
  phase: Running
  conditions:
  - {type: PodScheduled, status: "True"}
  - {type: Ready, status: "False"}`,
			want: []string{`PodReady=String:"False"`, `PodPhase=String:"Running"`},
		},
		{
			name: "statefulset reports ready, total and available replicas",
			manifest: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
status: {replicas: 3, readyReplicas: 3, availableReplicas: 2, currentReplicas: 3}`,
			want: []string{"ReadyReplicas=Integer:3", "Replicas=Integer:3", "AvailableReplicas=Integer:2"},
		},
		{
			name: "daemonset reports ready, desired and available pods",
			manifest: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
status: {numberReady: 4, desiredNumberScheduled: 5, numberAvailable: 3, currentNumberScheduled: 5}`,
			want: []string{"NumberReady=Integer:4", "DesiredNumberScheduled=Integer:5", "NumberAvailable=Integer:3"},
		},
		{
			name: "deployment of another API version has no well-known fields, as in OCM",
			manifest: `
apiVersion: extensions/v1beta1
kind: Deployment
metadata: {name: web}
status: {replicas: 1, readyReplicas: 1}`,
			wantErr: feedback.ErrNoWellKnownStatus,
		},
		{
			name: "kind outside the table is an error that suggests JSONPaths",
			manifest: `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}`,
			wantErr: feedback.ErrNoWellKnownStatus,
		},
	}
	ev := feedback.New(feedback.Options{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ev.Evaluate(object(t, c.manifest), wellKnownRule())
			expectValues(t, got, c.want)
			if c.wantErr == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("error = %v, want %v", err, c.wantErr)
			}
			if !strings.Contains(err.Error(), "use a JSONPaths rule") || !strings.Contains(err.Error(), "feedbackRules[0]") {
				t.Errorf("error %q does not name the rule and the way out", err)
			}
		})
	}
}

func TestJSONPathsValueTypes(t *testing.T) {
	const manifest = `
apiVersion: example.io/v1
kind: Widget
metadata: {name: w, labels: {tier: web}}
status:
  count: 7
  negative: -3
  phase: Ready
  empty: ""
  healthy: true
  paused: false
  ratio: 0.25
  endpoint: {host: w.example.io, port: 443}
  zones: [a, b]
  conditions:
  - {type: Available, status: "True"}
  - {type: Degraded, status: "False"}
  - {type: Synced, status: "True"}
`
	cases := []struct {
		name    string
		jsonRaw bool
		path    string
		want    []string
		wantErr error
	}{
		{name: "integer field is Integer", path: ".status.count", want: []string{"v=Integer:7"}},
		{name: "negative integer is Integer", path: ".status.negative", want: []string{"v=Integer:-3"}},
		{name: "string field is String", path: ".status.phase", want: []string{`v=String:"Ready"`}},
		{name: "empty string is still a String", path: ".status.empty", want: []string{`v=String:""`}},
		{name: "true is Boolean", path: ".status.healthy", want: []string{"v=Boolean:true"}},
		{name: "false is Boolean", path: ".status.paused", want: []string{"v=Boolean:false"}},
		{name: "filter selecting one condition yields its status", path: `.status.conditions[?(@.type=="Degraded")].status`,
			want: []string{`v=String:"False"`}},
		{name: "trailing blank in the path is tolerated, as in OCM", path: ".status.phase ", want: []string{`v=String:"Ready"`}},
		{name: "path is from the object root so metadata is reachable", path: ".metadata.labels.tier",
			want: []string{`v=String:"web"`}},
		{name: "indexing one element yields it", path: ".status.zones[1]", want: []string{`v=String:"b"`}},

		{name: "map is an error without JsonRaw", path: ".status.endpoint", wantErr: feedback.ErrUnsupportedValue},
		{name: "list is an error without JsonRaw", path: ".status.zones", wantErr: feedback.ErrUnsupportedValue},
		{name: "fraction is an error without JsonRaw", path: ".status.ratio", wantErr: feedback.ErrUnsupportedValue},
		{name: "several matches are an error without JsonRaw", path: `.status.conditions[?(@.status=="True")].type`,
			wantErr: feedback.ErrNotSingleValue},

		{name: "map is JsonRaw with sorted keys", jsonRaw: true, path: ".status.endpoint",
			want: []string{`v=JsonRaw:{"host":"w.example.io","port":443}`}},
		{name: "list is JsonRaw", jsonRaw: true, path: ".status.zones", want: []string{`v=JsonRaw:["a","b"]`}},
		{name: "fraction is JsonRaw", jsonRaw: true, path: ".status.ratio", want: []string{"v=JsonRaw:0.25"}},
		{name: "several matches are one JsonRaw list", jsonRaw: true, path: `.status.conditions[?(@.status=="True")].type`,
			want: []string{`v=JsonRaw:["Available","Synced"]`}},
		{name: "scalars stay typed with JsonRaw on", jsonRaw: true, path: ".status.count", want: []string{"v=Integer:7"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := feedback.New(feedback.Options{JSONRaw: c.jsonRaw})
			got, err := ev.Evaluate(object(t, manifest), jsonPaths("v", c.path))
			expectValues(t, got, c.want)
			if c.wantErr == nil && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if c.wantErr != nil && !errors.Is(err, c.wantErr) {
				t.Fatalf("error = %v, want %v", err, c.wantErr)
			}
		})
	}
}

func TestObjectsBuiltInProcessReportPlainIntsAsIntegers(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"status": map[string]any{"replicas": 2, "readyReplicas": int32(1)},
	}}
	got, err := feedback.New(feedback.Options{}).Evaluate(obj, wellKnownRule())
	if err != nil {
		t.Fatal(err)
	}
	expectValues(t, got, []string{"ReadyReplicas=Integer:1", "Replicas=Integer:2"})
}

func TestJSONRawLengthLimit(t *testing.T) {
	// A string of n characters encodes as n+2 bytes of JSON inside a list of one: ["..."] adds 4.
	listOf := func(n int) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Thing\nstatus:\n  items: [%q]\n", strings.Repeat("x", n))
	}
	cases := []struct {
		name    string
		max     int
		length  int // characters in the one list item
		wantErr bool
	}{
		{name: "default limit admits exactly 1024 bytes", length: 1024 - 4},
		{name: "default limit rejects 1025 bytes", length: 1025 - 4, wantErr: true},
		{name: "configured limit admits exactly its size", max: 10, length: 10 - 4},
		{name: "configured limit rejects one byte more", max: 10, length: 11 - 4, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := feedback.New(feedback.Options{JSONRaw: true, MaxJSONRawLength: c.max})
			got, err := ev.Evaluate(object(t, listOf(c.length)), jsonPaths("items", ".status.items"))
			if c.wantErr {
				if !errors.Is(err, feedback.ErrJSONRawTooLong) {
					t.Fatalf("error = %v, want ErrJSONRawTooLong", err)
				}
				expectValues(t, got, nil)
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if len(got) != 1 || got[0].Value.JsonRaw == nil {
				t.Fatalf("values = %q, want one JsonRaw", show(got))
			}
			if want := `["` + strings.Repeat("x", c.length) + `"]`; *got[0].Value.JsonRaw != want {
				t.Errorf("JsonRaw = %s, want %s", *got[0].Value.JsonRaw, want)
			}
		})
	}
	if feedback.DefaultMaxJSONRawLength != 1024 {
		t.Errorf("DefaultMaxJSONRawLength = %d, want the CRD's maxLength 1024", feedback.DefaultMaxJSONRawLength)
	}
}

func TestMissingFieldsYieldNoValueAndNoError(t *testing.T) {
	const manifest = `
apiVersion: v1
kind: Service
metadata: {name: front}
status:
  loadBalancer: {}
  note: null
  conditions:
  - {type: Ready, status: "True"}
`
	cases := []struct{ name, path string }{
		{"absent leaf", ".status.loadBalancer.hostname"},
		{"absent parent", ".status.nothing.here"},
		{"index into an absent list", ".status.loadBalancer.ingress[0].ip"},
		{"null value", ".status.note"},
		{"filter without a match", `.status.conditions[?(@.type=="Gone")].status`},
		{"field of a string", ".metadata.name.first"},
		{"status-relative path of the old agent finds nothing at the root", ".readyReplicas"},
	}
	ev := feedback.New(feedback.Options{JSONRaw: true})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ev.Evaluate(object(t, manifest), jsonPaths("v", c.path))
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			expectValues(t, got, nil)
		})
	}
	t.Run("object without status", func(t *testing.T) {
		got, err := ev.Evaluate(object(t, "apiVersion: v1\nkind: Service\nmetadata: {name: front}\n"),
			jsonPaths("ip", ".status.loadBalancer.ingress[0].ip", "ready", `.status.conditions[?(@.type=="Ready")].status`))
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		expectValues(t, got, nil)
	})
}

func TestBadPathsAreErrorsNamingRuleAndPath(t *testing.T) {
	const manifest = `
apiVersion: v1
kind: Service
metadata: {name: front}
status:
  loadBalancer: {ingress: []}
  conditions: [{type: Ready, status: "True"}]
`
	cases := []struct {
		name, path string
		wantErr    error
	}{
		{"unterminated filter", `.status.conditions[?(@.type=="Ready"`, feedback.ErrInvalidPath},
		{"unclosed bracket", ".status.conditions[0", feedback.ErrInvalidPath},
		{"missing leading dot", "status.conditions", feedback.ErrInvalidPath},
		{"index past the end of a present list, as in OCM", ".status.loadBalancer.ingress[0].ip", feedback.ErrInvalidPath},
		{"wildcard over a map", ".status.loadBalancer[*]", feedback.ErrInvalidPath},
		{"empty path", "  ", feedback.ErrInvalidRule},
	}
	ev := feedback.New(feedback.Options{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ev.Evaluate(object(t, manifest), jsonPaths("lb", c.path))
			expectValues(t, got, nil)
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("error = %v, want %v", err, c.wantErr)
			}
			errs := ruleErrors(t, err)
			if len(errs) != 1 {
				t.Fatalf("got %d rule errors, want 1: %v", len(errs), err)
			}
			if e := errs[0]; e.Rule != 0 || e.Name != "lb" || e.Path != c.path || e.Type != workv1.JSONPathsType {
				t.Errorf("rule error = %+v, want rule 0, name lb, path %q", e, c.path)
			}
			if msg := err.Error(); !strings.Contains(msg, `"lb"`) || !strings.Contains(msg, fmt.Sprintf("%q", c.path)) {
				t.Errorf("message %q does not name the rule and the path", msg)
			}
		})
	}
}

func TestFailedRulesDoNotHideTheOthers(t *testing.T) {
	rules := []workv1.FeedbackRule{
		{Type: workv1.WellKnownStatusType},
		{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{
			{Name: "conditions", Path: ".status.conditions"},
			{Name: "generation", Path: ".status.observedGeneration"},
			{Name: "broken", Path: ".status.conditions[?(@.type=="},
			{Name: "updated", Path: ".status.updatedReplicas"},
		}},
		{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{
			{Name: "old", Path: ".status.replicas", Version: "v1beta2"},
			{Name: "current", Path: ".status.replicas", Version: "v1"},
		}},
	}
	got, err := feedback.New(feedback.Options{}).Evaluate(object(t, deploymentYAML), rules)
	expectValues(t, got, []string{
		"ReadyReplicas=Integer:2", "Replicas=Integer:3", "AvailableReplicas=Integer:1",
		"generation=Integer:4", "updated=Integer:3", "current=Integer:3",
	})
	errs := ruleErrors(t, err)
	type where struct {
		rule int
		name string
		kind error
	}
	var gotWhere []where
	for _, e := range errs {
		for _, kind := range []error{feedback.ErrUnsupportedValue, feedback.ErrInvalidPath, feedback.ErrVersionMismatch} {
			if errors.Is(e, kind) {
				gotWhere = append(gotWhere, where{e.Rule, e.Name, kind})
			}
		}
	}
	want := []where{
		{1, "conditions", feedback.ErrUnsupportedValue},
		{1, "broken", feedback.ErrInvalidPath},
		{2, "old", feedback.ErrVersionMismatch},
	}
	if !reflect.DeepEqual(gotWhere, want) {
		t.Errorf("rule errors = %v\nwant %v", err, want)
	}
	if msg := err.Error(); strings.Count(msg, "feedbackRules[") != 3 {
		t.Errorf("message should list all three failures, got %q", msg)
	}
}

func TestValuesComeInSpecOrder(t *testing.T) {
	rules := []workv1.FeedbackRule{
		{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{
			{Name: "zeta", Path: ".status.replicas"},
			{Name: "alpha", Path: ".status.observedGeneration"},
			{Name: "mid", Path: `.status.conditions[?(@.type=="Available")].reason`},
		}},
		{Type: workv1.WellKnownStatusType},
		{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{
			{Name: "beta", Path: ".status.updatedReplicas"},
		}},
	}
	want := []string{
		"zeta=Integer:3", "alpha=Integer:4", `mid=String:"MinimumReplicasAvailable"`,
		"ReadyReplicas=Integer:2", "Replicas=Integer:3", "AvailableReplicas=Integer:1",
		"beta=Integer:3",
	}
	ev := feedback.New(feedback.Options{})
	first, err := ev.Evaluate(object(t, deploymentYAML), rules)
	if err != nil {
		t.Fatal(err)
	}
	expectValues(t, first, want)
	// Evaluation must not depend on map iteration anywhere: repeat it on fresh decodes of the same object.
	for i := 0; i < 50; i++ {
		again, err := ev.Evaluate(object(t, deploymentYAML), rules)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(again, first) {
			t.Fatalf("evaluation %d differs:\n got  %q\n want %q", i, show(again), show(first))
		}
	}
}

func TestEachNameIsReportedOnce(t *testing.T) {
	rules := []workv1.FeedbackRule{
		{Type: workv1.WellKnownStatusType},
		{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{
			{Name: "Replicas", Path: ".spec.replicas"},
			{Name: "spec", Path: ".spec.replicas"},
		}},
	}
	t.Run("a later rule reusing a name is skipped with an error", func(t *testing.T) {
		got, err := feedback.New(feedback.Options{}).Evaluate(object(t, deploymentYAML), rules)
		expectValues(t, got, []string{
			"ReadyReplicas=Integer:2", "Replicas=Integer:3", "AvailableReplicas=Integer:1", "spec=Integer:3",
		})
		errs := ruleErrors(t, err)
		if len(errs) != 1 || !errors.Is(errs[0], feedback.ErrDuplicateName) || errs[0].Rule != 1 || errs[0].Name != "Replicas" {
			t.Fatalf("error = %v, want one ErrDuplicateName for Replicas in rule 1", err)
		}
		if !strings.Contains(err.Error(), "feedbackRules[0] already reports") {
			t.Errorf("message %q does not say which rule owns the name", err)
		}
	})
	t.Run("the first rule keeps the name while its field is still absent", func(t *testing.T) {
		fresh := object(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 3}\n")
		got, err := feedback.New(feedback.Options{}).Evaluate(fresh, rules)
		expectValues(t, got, []string{"spec=Integer:3"})
		if !errors.Is(err, feedback.ErrDuplicateName) {
			t.Fatalf("error = %v, want ErrDuplicateName", err)
		}
	})
}

func TestInvalidRules(t *testing.T) {
	obj := object(t, deploymentYAML)
	cases := []struct {
		name  string
		rules []workv1.FeedbackRule
		want  string
	}{
		{"unknown rule type", []workv1.FeedbackRule{{Type: "Everything"}}, `unknown type "Everything"`},
		{"entry without a name", jsonPaths("", ".status.replicas"), "the name is empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := feedback.New(feedback.Options{}).Evaluate(obj, c.rules)
			expectValues(t, got, nil)
			if !errors.Is(err, feedback.ErrInvalidRule) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want ErrInvalidRule mentioning %q", err, c.want)
			}
		})
	}
}

func TestNoRulesOrNoObject(t *testing.T) {
	ev := feedback.New(feedback.Options{})
	if got, err := ev.Evaluate(object(t, deploymentYAML), nil); got != nil || err != nil {
		t.Errorf("no rules: got %q, %v; want nothing", show(got), err)
	}
	if _, err := ev.Evaluate(nil, wellKnownRule()); err == nil {
		t.Error("nil object: no error")
	}
}

func TestRuleErrorMessage(t *testing.T) {
	e := &feedback.RuleError{Rule: 2, Type: workv1.JSONPathsType, Name: "ip", Path: ".status.ip",
		Err: fmt.Errorf("%w: boom", feedback.ErrInvalidPath)}
	if want := `feedbackRules[2] (JSONPaths) "ip" at path ".status.ip": invalid JSONPath: boom`; e.Error() != want {
		t.Errorf("message = %q, want %q", e.Error(), want)
	}
	whole := &feedback.RuleError{Rule: 0, Type: workv1.WellKnownStatusType, Err: feedback.ErrNoWellKnownStatus}
	if want := "feedbackRules[0] (WellKnownStatus): no well-known status fields"; whole.Error() != want {
		t.Errorf("message = %q, want %q", whole.Error(), want)
	}
	if !errors.Is(e, feedback.ErrInvalidPath) {
		t.Error("RuleError does not unwrap to its cause")
	}
}

func TestWellKnownPaths(t *testing.T) {
	deploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	paths := feedback.WellKnownPaths(deploy)
	want := []workv1.JsonPath{
		{Name: "ReadyReplicas", Path: ".status.readyReplicas"},
		{Name: "Replicas", Path: ".status.replicas"},
		{Name: "AvailableReplicas", Path: ".status.availableReplicas"},
	}
	if !reflect.DeepEqual(paths, want) {
		t.Fatalf("Deployment paths = %+v, want %+v", paths, want)
	}
	paths[0].Path = ".status.changed"
	if again := feedback.WellKnownPaths(deploy); again[0].Path != ".status.readyReplicas" {
		t.Error("changing the returned slice changed the table")
	}
	if p := feedback.WellKnownPaths(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}); p != nil {
		t.Errorf("ConfigMap paths = %+v, want none", p)
	}
}

func BenchmarkEvaluateDeploymentWellKnown(b *testing.B) {
	obj := object(b, deploymentYAML)
	rules := wellKnownRule()
	ev := feedback.New(feedback.Options{})
	b.ReportAllocs()
	for b.Loop() {
		values, err := ev.Evaluate(obj, rules)
		if err != nil || len(values) != 3 {
			b.Fatalf("got %d values, %v", len(values), err)
		}
	}
}
