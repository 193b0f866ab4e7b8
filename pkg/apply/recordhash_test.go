package apply_test

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-mc/ferry/pkg/apply"
)

// RecordHash of a manifest equals AppliedHash of an object whose last-applied record is that manifest
// as Apply records it: without the fields the API server owns, and without a namespace when the
// resource is cluster-scoped. A different manifest hashes differently; an object without a record has
// no applied hash.
func TestRecordHashMatchesTheRecordApplyWrites(t *testing.T) {
	manifest := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
		"metadata": map[string]any{"name": "r", "namespace": "ignored", "resourceVersion": "7", "uid": "u"},
		"rules":    []any{},
		"status":   map[string]any{"x": "y"},
	}}
	record, err := json.Marshal(map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
		"metadata": map[string]any{"name": "r"}, "rules": []any{},
	})
	if err != nil {
		t.Fatal(err)
	}
	applied := apply.AppliedHash(map[string]string{apply.LastAppliedAnnotation: string(record)})
	got, err := apply.RecordHash(manifest, false)
	if err != nil {
		t.Fatal(err)
	}
	if got != applied {
		t.Errorf("RecordHash = %s, AppliedHash of its record = %s: want equal", got, applied)
	}
	if namespaced, _ := apply.RecordHash(manifest, true); namespaced == applied {
		t.Error("RecordHash kept no namespace for a namespaced resource")
	}
	if stored := apply.AppliedHash(map[string]string{apply.LastAppliedRefAnnotation: "key/" + got}); stored != got {
		t.Errorf("AppliedHash of a stored record's reference = %s, want %s", stored, got)
	}
	if none := apply.AppliedHash(nil); none != "" {
		t.Errorf("AppliedHash without a record = %q, want empty", none)
	}
	if _, err := apply.RecordHash(&unstructured.Unstructured{Object: map[string]any{"kind": "ConfigMap"}}, true); !apply.IsInvalidManifest(err) {
		t.Errorf("RecordHash of a manifest without apiVersion: %v, want an invalid-manifest error", err)
	}
}
