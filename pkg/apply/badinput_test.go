package apply_test

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-mc/ferry/pkg/apply"
)

func TestBadManifestsFailWithAnErrorThatSaysWhy(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name     string
		manifest string
		is       func(error) bool
		says     string
	}{
		{"no kind", `{apiVersion: v1, metadata: {name: a, namespace: "{{ns}}"}}`, apply.IsInvalidManifest, "kind"},
		{"no apiVersion", `{kind: ConfigMap, metadata: {name: a, namespace: "{{ns}}"}}`, apply.IsInvalidManifest, "apiVersion"},
		{"no name", `{apiVersion: v1, kind: ConfigMap, metadata: {namespace: "{{ns}}"}}`, apply.IsInvalidManifest, "metadata.name"},
		{"generateName", `{apiVersion: v1, kind: ConfigMap, metadata: {generateName: a-, namespace: "{{ns}}"}}`, apply.IsInvalidManifest, "generateName"},
		{"unknown kind", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: a, namespace: "{{ns}}"}}`, apply.IsUnknownKind, `"Widget"`},
		{"namespaced without namespace", `{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}`, apply.IsInvalidManifest, "no metadata.namespace"},
		{"rejected by the API server", `{apiVersion: v1, kind: ConfigMap, metadata: {name: "Not_A_Name", namespace: "{{ns}}"}}`, apierrors.IsInvalid, "Not_A_Name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := f.writes.Load()
			_, err := f.applier.Apply(t.Context(), f.manifest(c.manifest), apply.Options{})
			if err == nil || !c.is(err) {
				t.Fatalf("error = %v, want one of its kind", err)
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Errorf("error %q does not mention %s", err, c.says)
			}
			if c.name != "rejected by the API server" && f.writes.Load() != before {
				t.Errorf("an invalid manifest was sent to the API server")
			}
		})
	}
}

// A manifest whose last-applied record would not fit in an annotation keeps its record in the record
// store, and the 3-way merge works as for any other.
func TestUpdateKeepsLargeRecordsInTheRecordStore(t *testing.T) {
	f := newFixture(t)
	big := strings.Repeat("x", 200<<10)
	cm := f.manifest(`{apiVersion: v1, kind: ConfigMap, metadata: {name: big, namespace: "{{ns}}"}, data: {a: "1", b: "2"}}`)
	cm.Object["data"].(map[string]any)["big"] = big

	if _, err := f.applier.Apply(t.Context(), cm, apply.Options{}); !apply.IsInvalidManifest(err) || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("without a record store: %v, want an invalid-manifest error saying it is too large", err)
	}

	f.applier.WithRecordStore(apply.NewSecretRecordStore(f.kube, f.ns))
	res := f.apply(cm, apply.Options{})
	ann := res.Object.GetAnnotations()
	if _, inline := ann[apply.LastAppliedAnnotation]; inline || ann[apply.LastAppliedRefAnnotation] == "" {
		t.Fatalf("annotations = %v, want a reference to the stored record and no inline record", keys(ann))
	}
	f.noWrites(cm, apply.Options{})
	secrets, err := f.kube.CoreV1().Secrets(f.ns).List(t.Context(), metav1.ListOptions{LabelSelector: apply.RecordLabel})
	if err != nil || len(secrets.Items) != 1 {
		t.Fatalf("record secrets = %v (%v), want 1", len(secrets.Items), err)
	}

	delete(cm.Object["data"].(map[string]any), "a")
	res = f.apply(cm, apply.Options{})
	data := res.Object.Object["data"].(map[string]any)
	if _, ok := data["a"]; ok || data["b"] != "2" || data["big"] != big {
		t.Errorf("data keys after removing a = %v, want b and big", keys(data))
	}

	// Shrinking the manifest moves the record back into the annotation.
	delete(cm.Object["data"].(map[string]any), "big")
	res = f.apply(cm, apply.Options{})
	ann = res.Object.GetAnnotations()
	if _, ref := ann[apply.LastAppliedRefAnnotation]; ref || ann[apply.LastAppliedAnnotation] == "" {
		t.Errorf("annotations = %v, want only the inline record", keys(ann))
	}
	if _, ok := res.Object.Object["data"].(map[string]any)["big"]; ok {
		t.Errorf("big was not removed")
	}
	secrets, err = f.kube.CoreV1().Secrets(f.ns).List(t.Context(), metav1.ListOptions{LabelSelector: apply.RecordLabel})
	if err != nil || len(secrets.Items) != 0 {
		t.Errorf("record secrets left = %v (%v), want none once the record is inline again", len(secrets.Items), err)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
