package agent

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

const widgetsCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com, resourceVersion: "7", uid: u1}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget}
  versions:
  - {name: v1, served: true, storage: false, schema: {openAPIV3Schema: {type: object, description: a long schema}}}
  - {name: v2, served: true, storage: true}
  - {name: v0, served: false, storage: false}
status:
  conditions:
  - {type: NamesAccepted, status: "True"}
  - {type: Established, status: "True"}
`

func decodeCRD(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// The informer keeps a trimmed CRD; what the agent reads of it is the same as of the full one.
func TestTrimmedCRDSummarizesAsTheFullOne(t *testing.T) {
	full := decodeCRD(t, widgetsCRD)
	trimmed, err := trimCRD(full)
	if err != nil {
		t.Fatal(err)
	}
	got, want := summarize(trimmed.(*unstructured.Unstructured)), summarize(full)
	if !got.equal(want) {
		t.Errorf("trimmed summary %+v, want %+v", got, want)
	}
	if want.kind != (schema.GroupKind{Group: "example.com", Kind: "Widget"}) || !want.namespaced || !want.established ||
		len(want.versions) != 2 || want.versions[0] != "v1" || want.versions[1] != "v2" {
		t.Errorf("summary %+v: want Widget.example.com, namespaced, established, served v1 and v2", want)
	}
	versions, _, _ := unstructured.NestedSlice(trimmed.(*unstructured.Unstructured).Object, "spec", "versions")
	for _, v := range versions {
		if _, ok := v.(map[string]any)["schema"]; ok {
			t.Error("the trimmed CRD keeps its schema")
		}
	}
}

// A mapping agrees with the spoke's CRD of its kind only in scope and a served version; kinds no CRD
// defines are taken as mapped.
func TestMappingAgreesWithTheSpokesCRD(t *testing.T) {
	tr := &crdTracker{mapper: meta.NewDefaultRESTMapper(nil), byName: map[string]crdSummary{}}
	tr.observe(decodeCRD(t, widgetsCRD), false)
	mapping := func(version string, scope meta.RESTScope) *meta.RESTMapping {
		return &meta.RESTMapping{GroupVersionKind: schema.GroupVersionKind{Group: "example.com", Version: version, Kind: "Widget"}, Scope: scope}
	}
	for _, tc := range []struct {
		name    string
		mapping *meta.RESTMapping
		agrees  bool
	}{
		{"served version, same scope", mapping("v2", meta.RESTScopeNamespace), true},
		{"another scope", mapping("v2", meta.RESTScopeRoot), false},
		{"a version not served", mapping("v0", meta.RESTScopeNamespace), false},
		{"a kind no CRD defines", &meta.RESTMapping{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Scope: meta.RESTScopeNamespace}, true},
	} {
		if got := tr.agrees(tc.mapping); got != tc.agrees {
			t.Errorf("%s: agrees = %t, want %t", tc.name, got, tc.agrees)
		}
	}
}

// A work waiting for a kind is requeued once a CRD of it is Established, and only then.
func TestWaitingWorkIsRequeuedWhenItsKindIsEstablished(t *testing.T) {
	var requeued []string
	tr := &crdTracker{mapper: meta.NewDefaultRESTMapper(nil), byName: map[string]crdSummary{},
		waiting: map[schema.GroupKind]map[string]bool{}, enqueue: func(w string) { requeued = append(requeued, w) }}
	kind := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	if tr.waitFor(kind, "w1") {
		t.Fatal("waitFor: served before any CRD exists")
	}
	pending := decodeCRD(t, widgetsCRD)
	unstructured.RemoveNestedField(pending.Object, "status")
	tr.observe(pending, false)
	if len(requeued) != 0 {
		t.Fatalf("requeued %v for a CRD not Established", requeued)
	}
	tr.observe(decodeCRD(t, widgetsCRD), false)
	if len(requeued) != 1 || requeued[0] != "w1" {
		t.Fatalf("requeued %v once Established, want [w1]", requeued)
	}
	if !tr.waitFor(kind, "w2") {
		t.Error("waitFor: not served once Established")
	}
}
