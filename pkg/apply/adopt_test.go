package apply_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ferry-mc/ferry/pkg/apply"
)

var configMaps = corev1.SchemeGroupVersion.WithResource("configmaps")

const adoptedConfigMap = `
apiVersion: v1
kind: ConfigMap
metadata: {name: adopted, namespace: {{ns}}}
data: {k: "1"}
`

// An object another agent applied (OCM's work agent, before a klusterlet runs Ferry in its place), as
// the manifest says and with the owner, is adopted under Update without a write; the first change of
// the manifest writes it, with Ferry's record from then on.
func TestUpdateAdoptsAnObjectThatHoldsTheManifestWithoutWriting(t *testing.T) {
	f := newFixture(t)
	owner := &metav1.OwnerReference{APIVersion: "work.open-cluster-management.io/v1", Kind: "AppliedManifestWork", Name: "hub-work", UID: "4c1d3e"}
	live := f.manifest(adoptedConfigMap)
	live.SetOwnerReferences([]metav1.OwnerReference{*owner})
	if _, err := f.dynamic.Resource(configMaps).Namespace(f.ns).Create(t.Context(), live, metav1.CreateOptions{FieldManager: "work-agent"}); err != nil {
		t.Fatal(err)
	}
	opts := apply.Options{Owner: owner}
	if res := f.noWrites(f.manifest(adoptedConfigMap), opts); res.Operation != apply.Unchanged {
		t.Fatalf("apply over the object as another agent left it: %s, want Unchanged", res.Operation)
	}

	changed := f.manifest(adoptedConfigMap)
	changed.Object["data"] = map[string]any{"k": "2"}
	res := f.apply(changed, opts)
	if res.Operation != apply.Updated {
		t.Fatalf("apply of a changed manifest: %s, want Updated", res.Operation)
	}
	got := f.get(res, "adopted")
	if v, _, _ := unstructured.NestedString(got.Object, "data", "k"); v != "2" {
		t.Errorf("data.k = %q, want 2", v)
	}
	if _, ok := got.GetAnnotations()[apply.LastAppliedAnnotation]; !ok {
		t.Errorf("no last-applied record after the first change: %v", got.GetAnnotations())
	}
	if res := f.noWrites(changed, opts); res.Operation != apply.Unchanged {
		t.Errorf("resync after the change: %s, want Unchanged", res.Operation)
	}
}

// Adoption never hides a difference: an unrecorded object missing the owner or a value is written.
func TestUpdateWritesAnUnrecordedObjectThatDiffers(t *testing.T) {
	f := newFixture(t)
	owner := &metav1.OwnerReference{APIVersion: "work.open-cluster-management.io/v1", Kind: "AppliedManifestWork", Name: "hub-work", UID: "4c1d3e"}
	live := f.manifest(adoptedConfigMap)
	live.Object["data"] = map[string]any{"k": "edited"}
	if _, err := f.dynamic.Resource(configMaps).Namespace(f.ns).Create(t.Context(), live, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	res := f.apply(f.manifest(adoptedConfigMap), apply.Options{Owner: owner})
	if res.Operation != apply.Updated {
		t.Fatalf("apply over a differing object: %s, want Updated", res.Operation)
	}
	got := f.get(res, "adopted")
	if v, _, _ := unstructured.NestedString(got.Object, "data", "k"); v != "1" || len(got.GetOwnerReferences()) != 1 {
		t.Errorf("after apply: data.k %q, owners %v; want 1 and the owner", v, got.GetOwnerReferences())
	}
}

// Under ServerSideApply, an object the same field manager applied (OCM's work agent applies as
// "work-agent", as Ferry does) and that holds the manifest is adopted without a write; one made by
// another manager is applied, so that Ferry's manager owns its fields.
func TestServerSideApplyAdoptsWhatTheSameFieldManagerApplied(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		name    string
		manager string
		apply   bool // made with server-side apply, else created
		want    apply.Operation
	}{
		{"by-work-agent", apply.DefaultFieldManager, true, apply.Unchanged},
		{"by-someone", "kubectl", true, apply.Updated},
		{"created", apply.DefaultFieldManager, false, apply.Updated},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := f.manifest(adoptedConfigMap)
			m.SetName(c.name)
			data, err := m.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			ri := f.dynamic.Resource(configMaps).Namespace(f.ns)
			if c.apply {
				_, err = ri.Patch(t.Context(), c.name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: c.manager})
			} else {
				_, err = ri.Create(t.Context(), m, metav1.CreateOptions{FieldManager: c.manager})
			}
			if err != nil {
				t.Fatal(err)
			}
			res := f.apply(m, apply.Options{Strategy: apply.ServerSideApply})
			if res.Operation != c.want {
				t.Errorf("apply over an object %s made by %s: %s, want %s", map[bool]string{true: "server-side applied", false: "created"}[c.apply], c.manager, res.Operation, c.want)
			}
		})
	}
}
