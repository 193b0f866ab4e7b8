package apply

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// ignoreTestObject is the manifest the selector tests remove fields from.
const ignoreTestObject = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    example.com/owner: team-a
    a~b: tilde
    plain: kept
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: app
        image: app:1
        args: [--a, --b]
      - name: sidecar
        image: proxy:1
      - name: logger
        image: log:1
`

// decodeIgnoreTest reads YAML as the API machinery does: whole numbers become int64.
func decodeIgnoreTest(t *testing.T, y string) map[string]any {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// ignoreTestWithout returns ignoreTestObject with edit applied, for the expected results.
func ignoreTestWithout(t *testing.T, edit func(obj map[string]any)) map[string]any {
	obj := decodeIgnoreTest(t, ignoreTestObject)
	edit(obj)
	return obj
}

func igSpec(obj map[string]any) map[string]any { return obj["spec"].(map[string]any) }

func igContainers(obj map[string]any) []any {
	return igSpec(obj)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
}

func igSetContainers(obj map[string]any, cs []any) {
	igSpec(obj)["template"].(map[string]any)["spec"].(map[string]any)["containers"] = cs
}

func igAnnotations(obj map[string]any) map[string]any {
	return obj["metadata"].(map[string]any)["annotations"].(map[string]any)
}

// removeIgnored removes what field selects from ignoreTestObject.
func removeIgnored(t *testing.T, field IgnoreField) (map[string]any, error) {
	t.Helper()
	obj := decodeIgnoreTest(t, ignoreTestObject)
	selected, err := selectIgnored(context.Background(), obj, []IgnoreField{field})
	if err != nil {
		return nil, err
	}
	paths := make([][]any, 0, len(selected))
	for _, s := range selected {
		paths = append(paths, s.path)
	}
	removeAll(obj, paths)
	return obj, nil
}

func TestIgnoreFieldSelectorsRemoveWhatTheySelect(t *testing.T) {
	noReplicas := func(obj map[string]any) { delete(igSpec(obj), "replicas") }
	noSidecarImage := func(obj map[string]any) { delete(igContainers(obj)[1].(map[string]any), "image") }
	noSidecar := func(obj map[string]any) {
		cs := igContainers(obj)
		igSetContainers(obj, []any{cs[0], cs[2]})
	}
	noOwner := func(obj map[string]any) { delete(igAnnotations(obj), "example.com/owner") }
	unchanged := func(map[string]any) {}

	cases := []struct {
		name  string
		field IgnoreField
		want  func(obj map[string]any)
	}{
		{"JSONPath field", IgnoreField{JSONPaths: []string{".spec.replicas"}}, noReplicas},
		{"JSONPath in braces", IgnoreField{JSONPaths: []string{"{.spec.replicas}"}}, noReplicas},
		{"JSONPath with $", IgnoreField{JSONPaths: []string{"$.spec.replicas"}}, noReplicas},
		{"JSONPath through a filtered list", IgnoreField{JSONPaths: []string{`.spec.template.spec.containers[?(@.name=="sidecar")].image`}}, noSidecarImage},
		{"JSONPath list element by filter", IgnoreField{JSONPaths: []string{`.spec.template.spec.containers[?(@.name=="sidecar")]`}}, noSidecar},
		{"JSONPath list element by index", IgnoreField{JSONPaths: []string{`.spec.template.spec.containers[1]`}}, noSidecar},
		{"JSONPath list element by negative index", IgnoreField{JSONPaths: []string{`.spec.template.spec.containers[-2]`}}, noSidecar},
		{"JSONPath every element's field", IgnoreField{JSONPaths: []string{`.spec.template.spec.containers[*].image`}}, func(obj map[string]any) {
			for _, c := range igContainers(obj) {
				delete(c.(map[string]any), "image")
			}
		}},
		{"JSONPath escaped dots", IgnoreField{JSONPaths: []string{`.metadata.annotations.example\.com/owner`}}, noOwner},
		{"JSONPath single-quoted key", IgnoreField{JSONPaths: []string{`.metadata.annotations['example.com/owner']`}}, noOwner},
		{"JSONPath double-quoted key", IgnoreField{JSONPaths: []string{`.metadata.annotations["example.com/owner"]`}}, noOwner},
		{"JSONPath element of an atomic list", IgnoreField{JSONPaths: []string{`.spec.template.spec.containers[0].args[0]`}}, func(obj map[string]any) {
			igContainers(obj)[0].(map[string]any)["args"] = []any{"--b"}
		}},
		{"JSONPath missing field", IgnoreField{JSONPaths: []string{".spec.paused"}}, unchanged},
		{"JSONPath index out of range", IgnoreField{JSONPaths: []string{".spec.template.spec.containers[7].image"}}, unchanged},
		{"JSONPath filter matching nothing", IgnoreField{JSONPaths: []string{`.spec.template.spec.containers[?(@.name=="none")].image`}}, unchanged},
		{"JSONPath field of a scalar", IgnoreField{JSONPaths: []string{".spec.replicas.value"}}, unchanged},

		{"JSON Pointer field", IgnoreField{JSONPointers: []string{"/spec/replicas"}}, noReplicas},
		{"JSON Pointer ~1 escape", IgnoreField{JSONPointers: []string{"/metadata/annotations/example.com~1owner"}}, noOwner},
		{"JSON Pointer ~0 escape", IgnoreField{JSONPointers: []string{"/metadata/annotations/a~0b"}}, func(obj map[string]any) {
			delete(igAnnotations(obj), "a~b")
		}},
		{"JSON Pointer list element field", IgnoreField{JSONPointers: []string{"/spec/template/spec/containers/1/image"}}, noSidecarImage},
		{"JSON Pointer list element", IgnoreField{JSONPointers: []string{"/spec/template/spec/containers/1"}}, noSidecar},
		{"JSON Pointer missing field", IgnoreField{JSONPointers: []string{"/spec/paused"}}, unchanged},
		{"JSON Pointer index out of range", IgnoreField{JSONPointers: []string{"/spec/template/spec/containers/3"}}, unchanged},
		{"JSON Pointer index with a leading zero", IgnoreField{JSONPointers: []string{"/spec/template/spec/containers/01"}}, unchanged},
		{"JSON Pointer end of list", IgnoreField{JSONPointers: []string{"/spec/template/spec/containers/-"}}, unchanged},

		{"jq field", IgnoreField{JQPathExpressions: []string{".spec.replicas"}}, noReplicas},
		{"jq selected list element", IgnoreField{JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "sidecar")`}}, noSidecar},
		{"jq field of a selected element", IgnoreField{JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "sidecar") | .image`}}, noSidecarImage},
		{"jq several list elements", IgnoreField{JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name != "app")`}}, func(obj map[string]any) {
			igSetContainers(obj, igContainers(obj)[:1])
		}},
		{"jq key with a dot", IgnoreField{JQPathExpressions: []string{`.metadata.annotations["example.com/owner"]`}}, noOwner},
		{"jq negative index", IgnoreField{JQPathExpressions: []string{`.spec.template.spec.containers[-2]`}}, noSidecar},
		{"jq missing field", IgnoreField{JQPathExpressions: []string{".spec.paused"}}, unchanged},
		{"jq optional iteration of a missing list", IgnoreField{JQPathExpressions: []string{".spec.template.spec.volumes[]?"}}, unchanged},
		{"jq select matching nothing", IgnoreField{JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "none")`}}, unchanged},

		{"every form at once", IgnoreField{
			JSONPaths:         []string{".spec.replicas"},
			JSONPointers:      []string{"/metadata/annotations/example.com~1owner"},
			JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "sidecar")`},
		}, func(obj map[string]any) { noReplicas(obj); noOwner(obj); noSidecar(obj) }},
		{"two forms selecting one list element", IgnoreField{
			JSONPointers:      []string{"/spec/template/spec/containers/1"},
			JQPathExpressions: []string{`.spec.template.spec.containers[1]`},
		}, noSidecar},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := removeIgnored(t, c.field)
			if err != nil {
				t.Fatalf("select: %v", err)
			}
			if want := ignoreTestWithout(t, c.want); !reflect.DeepEqual(got, want) {
				t.Errorf("after removal:\n got %v\nwant %v", got, want)
			}
		})
	}
}

func TestIgnoreFieldInvalidSelectorsAreIgnoreFieldErrors(t *testing.T) {
	cases := []struct {
		name  string
		field IgnoreField
		kind  string
		expr  string
		says  string
	}{
		{"JSONPath that does not parse", IgnoreField{JSONPaths: []string{".spec.template.spec.containers[?(@.name=="}}, "JSONPath", ".spec.template.spec.containers[?(@.name==", "unterminated"},
		{"JSONPath with a bad index", IgnoreField{JSONPaths: []string{".spec.containers[x]"}}, "JSONPath", ".spec.containers[x]", "invalid array index"},
		{"JSONPath with two paths", IgnoreField{JSONPaths: []string{"{.spec}{.metadata}"}}, "JSONPath", "{.spec}{.metadata}", "exactly one path"},
		{"JSONPath with recursive descent", IgnoreField{JSONPaths: []string{"..image"}}, "JSONPath", "..image", "not supported"},
		{"JSONPath of the whole object", IgnoreField{JSONPaths: []string{"{}"}}, "JSONPath", "{}", "whole object"},
		{"JSON Pointer without a leading slash", IgnoreField{JSONPointers: []string{"spec/replicas"}}, "JSON Pointer", "spec/replicas", `starts with "/"`},
		{"JSON Pointer with a bad escape", IgnoreField{JSONPointers: []string{"/metadata/annotations/a~2b"}}, "JSON Pointer", "/metadata/annotations/a~2b", `"~" must be followed by 0 or 1`},
		{"JSON Pointer with a trailing tilde", IgnoreField{JSONPointers: []string{"/spec~"}}, "JSON Pointer", "/spec~", `"~" must be followed by 0 or 1`},
		{"empty JSON Pointer", IgnoreField{JSONPointers: []string{""}}, "JSON Pointer", "", "whole object"},
		{"jq that does not parse", IgnoreField{JQPathExpressions: []string{".spec["}}, "jq path expression", ".spec[", "unexpected"},
		{"jq that is not a path", IgnoreField{JQPathExpressions: []string{".spec.replicas | tostring"}}, "jq path expression", ".spec.replicas | tostring", "invalid path"},
		{"jq that fails", IgnoreField{JQPathExpressions: []string{".spec.replicas[]"}}, "jq path expression", ".spec.replicas[]", "cannot iterate"},
		{"jq slice", IgnoreField{JQPathExpressions: []string{".spec.template.spec.containers[0:1]"}}, "jq path expression", ".spec.template.spec.containers[0:1]", "slices are not supported"},
		{"jq of the whole object", IgnoreField{JQPathExpressions: []string{"."}}, "jq path expression", ".", "whole object"},
		{"unknown condition", IgnoreField{Condition: "Always", JSONPaths: []string{".spec.replicas"}}, "condition", "Always", "OnSpokePresent or OnSpokeChange"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := removeIgnored(t, c.field)
			if !IsIgnoreFieldError(err) {
				t.Fatalf("got error %v, want an IgnoreFieldError", err)
			}
			e := err.(*IgnoreFieldError)
			if e.Kind != c.kind || e.Expression != c.expr {
				t.Errorf("error names %s %q, want %s %q", e.Kind, e.Expression, c.kind, c.expr)
			}
			if !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), c.expr) {
				t.Errorf("message %q should name %q and say %q", err.Error(), c.expr, c.says)
			}
		})
	}
}

func TestIgnoreFieldJQEvaluationIsBounded(t *testing.T) {
	start := time.Now()
	_, err := removeIgnored(t, IgnoreField{JQPathExpressions: []string{"def loop: loop; .spec | loop"}})
	if !IsIgnoreFieldError(err) || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("got %v, want an IgnoreFieldError for the time limit", err)
	}
	if d := time.Since(start); d > 10*jqTimeout {
		t.Errorf("evaluation stopped after %s, want about %s", d, jqTimeout)
	}
}

func TestIgnoreFieldJQLeavesTheManifestsNumbersAlone(t *testing.T) {
	obj := decodeIgnoreTest(t, ignoreTestObject)
	if _, err := selectIgnored(context.Background(), obj, []IgnoreField{{JQPathExpressions: []string{".metadata.name"}}}); err != nil {
		t.Fatal(err)
	}
	// gojq turns int64 into int in its input; the manifest must keep int64, which deep copies require.
	if r, ok := igSpec(obj)["replicas"].(int64); !ok || r != 3 {
		t.Errorf("replicas is %#v after a jq selection, want int64(3)", igSpec(obj)["replicas"])
	}
}

// ignoreTestManagedFields is the FieldsV1 tree the API server keeps for a manager that applied ignoreTestObject.
const ignoreTestManagedFields = `{
  "f:metadata": {"f:annotations": {"f:example.com/owner": {}, "f:plain": {}}},
  "f:spec": {
    "f:replicas": {},
    "f:template": {"f:spec": {"f:containers": {
      "k:{\"name\":\"app\"}": {".": {}, "f:name": {}, "f:image": {}, "f:args": {}},
      "k:{\"name\":\"sidecar\"}": {".": {}, "f:name": {}}
    }}}
  }
}`

func TestIgnoreFieldOwnedPartFollowsManagedFields(t *testing.T) {
	var set map[string]any
	if err := json.Unmarshal([]byte(ignoreTestManagedFields), &set); err != nil {
		t.Fatal(err)
	}
	desired := decodeIgnoreTest(t, ignoreTestObject)
	// On the cluster the containers come in another order, and someone added an annotation.
	live := decodeIgnoreTest(t, ignoreTestObject)
	cs := igContainers(live)
	igSetContainers(live, []any{cs[2], cs[1], cs[0]})
	igAnnotations(live)["other"] = "theirs"

	cases := []struct {
		name  string
		path  []any
		want  any
		owned bool
	}{
		{"a field it owns", []any{"spec", "replicas"}, int64(3), true},
		{"a map it owns in part", []any{"metadata", "annotations"}, map[string]any{"example.com/owner": "team-a", "plain": "kept"}, true},
		{"a list element matched by key, not position", []any{"spec", "template", "spec", "containers", 0, "image"}, "app:1", true},
		{"inside an atomic list", []any{"spec", "template", "spec", "containers", 0, "args", 1}, "--b", true},
		{"a list element it owns in part", []any{"spec", "template", "spec", "containers", 1}, map[string]any{"name": "sidecar"}, true},
		{"a field another manager took", []any{"spec", "template", "spec", "containers", 1, "image"}, nil, false},
		{"a list element it never applied", []any{"spec", "template", "spec", "containers", 2}, nil, false},
		{"a list it owns in part", []any{"spec", "template", "spec", "containers"}, []any{
			map[string]any{"name": "sidecar"},
			map[string]any{"name": "app", "image": "app:1", "args": []any{"--a", "--b"}},
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := owned(set, desired, live, c.path)
			if ok != c.owned || !reflect.DeepEqual(got, c.want) {
				t.Errorf("owned = %#v, %v; want %#v, %v", got, ok, c.want, c.owned)
			}
		})
	}
	if _, ok := owned(nil, desired, live, []any{"spec", "replicas"}); ok {
		t.Error("a manager with no applied fields owns .spec.replicas")
	}
}
