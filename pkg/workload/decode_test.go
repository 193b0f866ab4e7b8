package workload

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"
)

// A hub without the ManifestWork schema (or an older one) can hand the agent manifests that are not
// objects; each gets an error of its own and the others decode.
func TestDecodeKeepsAnErrorPerManifest(t *testing.T) {
	work := &workv1.ManifestWork{}
	for _, raw := range []string{`[1,2]`, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`, `null`, `{not json`} {
		work.Spec.Workload.Manifests = append(work.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(raw)}})
	}
	ms := Decode(work)
	if len(ms) != 4 {
		t.Fatalf("decoded %d manifests, want 4", len(ms))
	}
	for i, want := range []string{"not a JSON or YAML object", "", "empty", "not a JSON or YAML object"} {
		m := ms[i]
		if m.Ordinal != int32(i) {
			t.Errorf("manifest %d: ordinal %d", i, m.Ordinal)
		}
		switch {
		case want == "" && (m.DecodeErr != nil || m.Object == nil || m.Object.GetName() != "a"):
			t.Errorf("manifest %d: %v, %v; want the ConfigMap", i, m.Object, m.DecodeErr)
		case want != "" && (m.DecodeErr == nil || !strings.Contains(m.DecodeErr.Error(), want)):
			t.Errorf("manifest %d: error %v, want one saying %q", i, m.DecodeErr, want)
		}
	}
}

// A manifest decodes to the same object whether it comes as JSON (as the API server hands it over) or
// as YAML: the JSON path gives the values the YAML path gave before it existed, numbers included.
func TestJSONAndYAMLManifestsDecodeAlike(t *testing.T) {
	for _, tc := range []struct{ json, yaml string }{
		{`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"a":"1"}},"spec":{"replicas":3,"x":1.5,"big":9007199254740993,"on":true,"none":null,"list":[1,"two",{"k":"v"}]}}`,
			"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, labels: {a: \"1\"}}\nspec: {replicas: 3, x: 1.5, big: 9007199254740993, \"on\": true, none: null, list: [1, two, {k: v}]}\n"},
		{` {"kind":"ConfigMap","data":{"k":"line\nbreak \u00e9"}}`, "kind: ConfigMap\ndata: {k: \"line\\nbreak \u00e9\"}\n"},
	} {
		var fromJSON, fromYAML, viaYAML map[string]any
		if err := decodeObject([]byte(tc.json), &fromJSON); err != nil {
			t.Fatalf("JSON: %v", err)
		}
		if err := decodeObject([]byte(tc.yaml), &fromYAML); err != nil {
			t.Fatalf("YAML: %v", err)
		}
		if err := yaml.Unmarshal([]byte(tc.json), &viaYAML); err != nil {
			t.Fatalf("JSON read as YAML: %v", err)
		}
		if !reflect.DeepEqual(fromJSON, viaYAML) || !reflect.DeepEqual(fromJSON, fromYAML) {
			t.Errorf("decoded differently:\n JSON %#v\n JSON as YAML %#v\n YAML %#v", fromJSON, viaYAML, fromYAML)
		}
	}
}
