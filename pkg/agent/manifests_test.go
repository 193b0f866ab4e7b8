package agent

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
)

// A hub without the ManifestWork schema (or an older one) can hand the agent manifests that are not
// objects; each gets an error of its own and the others decode.
func TestDecodeManifestsKeepsAnErrorPerManifest(t *testing.T) {
	work := &workv1.ManifestWork{}
	for _, raw := range []string{`[1,2]`, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`, `null`, `{not json`} {
		work.Spec.Workload.Manifests = append(work.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(raw)}})
	}
	ms := decodeManifests(work)
	if len(ms) != 4 {
		t.Fatalf("decoded %d manifests, want 4", len(ms))
	}
	for i, want := range []string{"not a JSON or YAML object", "", "empty", "not a JSON or YAML object"} {
		m := ms[i]
		if m.ordinal != int32(i) {
			t.Errorf("manifest %d: ordinal %d", i, m.ordinal)
		}
		switch {
		case want == "" && (m.decodeErr != nil || m.obj == nil || m.obj.GetName() != "a"):
			t.Errorf("manifest %d: %v, %v; want the ConfigMap", i, m.obj, m.decodeErr)
		case want != "" && (m.decodeErr == nil || !strings.Contains(m.decodeErr.Error(), want)):
			t.Errorf("manifest %d: error %v, want one saying %q", i, m.decodeErr, want)
		}
	}
}

func TestApplyOrderPutsNamespacesThenCRDsFirst(t *testing.T) {
	work := &workv1.ManifestWork{}
	for _, raw := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n"}}`,
		`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"c"}}`,
		`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"}}`,
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"n"}}`,
	} {
		work.Spec.Workload.Manifests = append(work.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(raw)}})
	}
	var got []int32
	for _, m := range applyOrder(decodeManifests(work)) {
		got = append(got, m.ordinal)
	}
	if want := []int32{2, 1, 0, 3}; !slices.Equal(got, want) {
		t.Errorf("apply order = %v, want %v", got, want)
	}
}
