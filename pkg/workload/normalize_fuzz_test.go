package workload

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The apply engine's input checks take whatever a hub sends. For any JSON object: Normalize does not
// panic and either says why the manifest is invalid or returns an object that names what to apply
// (kind, apiVersion with a version, a name usable in a request path) without the server's fields,
// leaving its input alone; Hash does not panic, is deterministic and ignores the order of keys.
// Seeds: testdata/fuzz/FuzzNormalize.
func FuzzNormalize(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var obj map[string]any
		if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
			return // not a JSON object: never handed to the engine
		}
		manifest := &unstructured.Unstructured{Object: obj}
		hash := Hash(manifest)
		if again := Hash(manifest); again != hash {
			t.Fatalf("Hash is not deterministic: %s, then %s", hash, again)
		}
		if reordered := Hash(reencoded(t, obj)); reordered != hash {
			t.Fatalf("Hash depends on the order of keys: %s, re-encoded %s", hash, reordered)
		}

		out, err := Normalize(manifest)
		if Hash(manifest) != hash {
			t.Fatalf("Normalize changed its input")
		}
		if err != nil {
			var invalid *InvalidError
			if !errors.As(err, &invalid) || invalid.Reason == "" {
				t.Fatalf("Normalize: error %#v, want an *InvalidError with a reason", err)
			}
			if out != nil {
				t.Fatalf("Normalize returned an object with its error %v", err)
			}
			return
		}
		if out.GetKind() == "" || out.GetAPIVersion() == "" || out.GetName() == "" {
			t.Fatalf("Normalize accepted a manifest without kind %q, apiVersion %q or name %q", out.GetKind(), out.GetAPIVersion(), out.GetName())
		}
		if gv, err := schema.ParseGroupVersion(out.GetAPIVersion()); err != nil || gv.Version == "" {
			t.Fatalf("Normalize accepted apiVersion %q (%v)", out.GetAPIVersion(), err)
		}
		if msgs := path.IsValidPathSegmentName(out.GetName()); len(msgs) > 0 {
			t.Fatalf("Normalize accepted name %q: %v", out.GetName(), msgs)
		}
		if msgs := path.IsValidPathSegmentName(out.GetNamespace()); out.GetNamespace() != "" && len(msgs) > 0 {
			t.Fatalf("Normalize accepted namespace %q: %v", out.GetNamespace(), msgs)
		}
		if _, has := out.Object["status"]; has || out.GetResourceVersion() != "" || out.GetUID() != "" || out.GetManagedFields() != nil {
			t.Fatalf("Normalize kept a field the API server owns: %v", out.Object)
		}
		twice, err := Normalize(out)
		if err != nil || Hash(twice) != Hash(out) {
			t.Fatalf("Normalize is not idempotent: %v", err)
		}
	})
}

// reencoded encodes obj (encoding/json sorts keys) and decodes it again.
func reencoded(t *testing.T, obj map[string]any) *unstructured.Unstructured {
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("a decoded JSON object does not encode: %v", err)
	}
	var again map[string]any
	if err := json.Unmarshal(data, &again); err != nil {
		t.Fatalf("decode re-encoded object: %v", err)
	}
	return &unstructured.Unstructured{Object: again}
}

// The input checks the fuzz target found wanting say what is wrong, in the manifest's own terms.
func TestNormalizeSaysWhatIsWrongWithAManifest(t *testing.T) {
	cases := map[string]string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":"a"}`:                                   "metadata must be an object, not a string",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":5}}`:                            "metadata.name must be a string, not a number",
		`{"apiVersion":"v1","kind":["ConfigMap"],"metadata":{"name":"a"}}`:                        "kind must be a string, not an array",
		`{"apiVersion":"apps/","kind":"Deployment","metadata":{"name":"a"}}`:                      `apiVersion "apps/" has no version`,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web/status"}}`:           `metadata.name "web/status": may not contain '/'`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":".."}}`:         `metadata.namespace "..": may not be '..'`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"a-","namespace":"n"}}`: "generateName is not supported",
	}
	for manifest, says := range cases {
		var obj map[string]any
		if err := json.Unmarshal([]byte(manifest), &obj); err != nil {
			t.Fatal(err)
		}
		_, err := Normalize(&unstructured.Unstructured{Object: obj})
		var invalid *InvalidError
		if !errors.As(err, &invalid) || !strings.Contains(invalid.Reason, says) {
			t.Errorf("%s: error %v, want an invalid manifest saying %q", manifest, err, says)
		}
	}
}
