package hub_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
)

const patchTraitGroup = "extended.oam.dev"

// installPatchTraitKind defines a namespaced kind of patch trait (group extended.oam.dev, with a status
// subresource as a trait controller has) on the cluster c reaches, with its TraitDefinition, and waits
// until it is served.
func installPatchTraitKind(t *testing.T, c client.Client, kind string) {
	t.Helper()
	plural := strings.ToLower(kind) + "s"
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": plural + "." + patchTraitGroup},
		"spec": map[string]any{
			"group": patchTraitGroup,
			"scope": "Namespaced",
			"names": map[string]any{"kind": kind, "listKind": kind + "List", "plural": plural, "singular": strings.ToLower(kind)},
			"versions": []any{map[string]any{
				"name": "v1alpha2", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	if err := c.Create(t.Context(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create CRD %s: %v", crd.GetName(), err)
	}
	def := &v1alpha2.TraitDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + patchTraitGroup},
		Spec:       v1alpha2.TraitDefinitionSpec{Reference: v1alpha2.DefinitionReference{Name: plural + "." + patchTraitGroup}, Patch: true},
	}
	if err := c.Create(t.Context(), def); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create TraitDefinition %s: %v", def.Name, err)
	}
	eventually(t, "kind "+kind+" served", func(ctx context.Context) (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: patchTraitGroup, Version: "v1alpha2", Kind: kind + "List"})
		return c.List(ctx, list) == nil, nil
	})
}

// patchTraitController plays a patch trait's controller: it publishes patch in a ConfigMap and marks
// the trait Ready for its current generation.
func patchTraitController(t *testing.T, c client.Client, namespace, kind, name, patch string) {
	t.Helper()
	cmName := name + "-patch"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cmName, Namespace: namespace}, Data: map[string]string{hub.PatchConfigKey: patch}}
	if err := c.Create(t.Context(), cm); apierrors.IsAlreadyExists(err) {
		err = c.Update(t.Context(), cm)
		if err != nil {
			t.Fatalf("update ConfigMap %s: %v", cmName, err)
		}
	} else if err != nil {
		t.Fatalf("create ConfigMap %s: %v", cmName, err)
	}
	eventually(t, "mark "+kind+" "+name+" Ready", func(ctx context.Context) (bool, error) {
		tr := patchTrait(kind)
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, tr); err != nil {
			return false, nil
		}
		tr.Object["status"] = map[string]any{"phase": hub.PatchPhaseReady, "patchConfig": cmName, "observedGeneration": tr.GetGeneration()}
		return c.Status().Update(ctx, tr) == nil, nil
	})
}

func patchTrait(kind string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: patchTraitGroup, Version: "v1alpha2", Kind: kind})
	return u
}

func traitRaw(kind, spec string) v1alpha2.ComponentTrait {
	return v1alpha2.ComponentTrait{Trait: runtime.RawExtension{Raw: []byte(
		`{"apiVersion":"` + patchTraitGroup + `/v1alpha2","kind":"` + kind + `","spec":` + spec + `}`)}}
}

// workloadOf decodes the first manifest of a ManifestWork.
func workloadOf(t *testing.T, mw *workv1.ManifestWork) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(mw.Spec.Workload.Manifests[0].Raw, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// Seed 002 on the hub: the patch traits are created beside the AppConfig; the workload is delivered
// only once every one of them is Ready, with all their patches, as a revision of its own; a changed
// patch is delivered once it is published, as one more revision.
func TestPatchTraitsArePublishedAndMergedBeforeTheWorkloadIsDelivered(t *testing.T) {
	c := startHub(t)
	mustCreate(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}})
	mustCreate(t, c, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}})
	installPatchTraitKind(t, c, "NodeSelector")
	installPatchTraitKind(t, c, "SecurityContext")
	mustCreate(t, c, component("nginx:1"))
	app := &v1alpha2.ApplicationConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default"},
		Spec: v1alpha2.ApplicationConfigurationSpec{
			Placement: &v1alpha2.Placement{Clusters: []string{"cluster1"}},
			Components: []v1alpha2.ApplicationConfigurationComponent{{
				ComponentName: "web",
				Traits:        []v1alpha2.ComponentTrait{traitRaw("NodeSelector", `{"disktype":"ssd"}`), traitRaw("SecurityContext", `{"runAsNonRoot":true}`)},
			}},
		},
	}
	mustCreate(t, c, app)

	getApp := func(ctx context.Context) *v1alpha2.ApplicationConfiguration {
		got := &v1alpha2.ApplicationConfiguration{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(app), got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	work := func(ctx context.Context) (*workv1.ManifestWork, error) {
		mw := &workv1.ManifestWork{}
		return mw, c.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "default.shop"}, mw)
	}
	waitingFor := func(what string) {
		t.Helper()
		eventually(t, "AppConfig waiting for "+what, func(ctx context.Context) (bool, error) {
			cond := meta.FindStatusCondition(getApp(ctx).Status.Conditions, hub.ConditionReady)
			return cond != nil && cond.Reason == "WaitingForPatchTraits" && strings.Contains(cond.Message, what), nil
		})
	}

	// Both trait objects are created on the hub, owned by the AppConfig; nothing is delivered yet.
	for _, kind := range []string{"NodeSelector", "SecurityContext"} {
		eventually(t, kind+" created on the hub", func(ctx context.Context) (bool, error) {
			tr := patchTrait(kind)
			err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shop-web-" + strings.ToLower(kind)}, tr)
			return err == nil && len(tr.GetOwnerReferences()) == 1 && tr.GetOwnerReferences()[0].Name == "shop", nil
		})
	}
	waitingFor("NodeSelector default/shop-web-nodeselector")
	patchTraitController(t, c, "default", "NodeSelector", "shop-web-nodeselector", `{"spec":{"template":{"spec":{"nodeSelector":{"disktype":"ssd"}}}}}`)
	waitingFor("SecurityContext default/shop-web-securitycontext")
	if _, err := work(t.Context()); !apierrors.IsNotFound(err) {
		t.Fatalf("a ManifestWork exists while a patch trait is not Ready (%v): the workload would run without its patch", err)
	}

	patchTraitController(t, c, "default", "SecurityContext", "shop-web-securitycontext", `{"spec":{"template":{"spec":{"securityContext":{"runAsNonRoot":true}}}}}`)
	var mw *workv1.ManifestWork
	eventually(t, "ManifestWork with both patches", func(ctx context.Context) (bool, error) {
		var err error
		mw, err = work(ctx)
		return err == nil, nil
	})
	w := workloadOf(t, mw)
	if v, _, _ := unstructured.NestedString(w.Object, "spec", "template", "spec", "nodeSelector", "disktype"); v != "ssd" {
		t.Errorf("delivered Deployment lacks the nodeSelector patch: %v", w.Object)
	}
	if v, _, _ := unstructured.NestedBool(w.Object, "spec", "template", "spec", "securityContext", "runAsNonRoot"); !v {
		t.Errorf("delivered Deployment lacks the securityContext patch: %v", w.Object)
	}
	if w.GetLabels()[hub.LabelRevision] != "web-v2" || len(mw.Spec.Workload.Manifests) != 1 {
		t.Errorf("revision label %q and %d manifests; want web-v2 (the patched revision) and only the workload",
			w.GetLabels()[hub.LabelRevision], len(mw.Spec.Workload.Manifests))
	}
	eventually(t, "status names the patched revision and the patch traits", func(ctx context.Context) (bool, error) {
		s := getApp(ctx).Status
		return meta.IsStatusConditionTrue(s.Conditions, hub.ConditionReady) && len(s.Workloads) == 1 &&
			s.Workloads[0].ComponentRevisionName == "web-v2" && len(s.Workloads[0].PatchTraits) == 2, nil
	})
	rev := &appsv1.ControllerRevision{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "web-v2"}, rev); err != nil {
		t.Fatal(err)
	}
	if rev.Labels[hub.ComponentLabel] != "web" || rev.Labels[hub.PatchedLabel] == "" {
		t.Errorf("web-v2 labels %v: want a patched revision of web", rev.Labels)
	}
	comp := &v1alpha2.Component{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "web"}, comp); err != nil {
		t.Fatal(err)
	}
	if comp.Status.LatestRevision == nil || comp.Status.LatestRevision.Name != "web-v1" {
		t.Errorf("component latest revision %v: componentName keeps resolving to the component's own spec, web-v1", comp.Status.LatestRevision)
	}

	// The nodeSelector changes: the trait object follows, and until its controller publishes the new
	// patch the delivered workload stays as it was.
	eventually(t, "edit the AppConfig", func(ctx context.Context) (bool, error) {
		a := getApp(ctx)
		a.Spec.Components[0].Traits[0] = traitRaw("NodeSelector", `{"disktype":"nvme"}`)
		return c.Update(ctx, a) == nil, nil
	})
	waitingFor("its status is of generation 1, the trait is at 2")
	if mw2, err := work(t.Context()); err != nil || mw2.Generation != mw.Generation {
		t.Fatalf("ManifestWork changed (%v) while the changed patch is not published", err)
	}
	patchTraitController(t, c, "default", "NodeSelector", "shop-web-nodeselector", `{"spec":{"template":{"spec":{"nodeSelector":{"disktype":"nvme"}}}}}`)
	eventually(t, "ManifestWork with the new patch, as revision web-v3", func(ctx context.Context) (bool, error) {
		mw, err := work(ctx)
		if err != nil {
			return false, err
		}
		w := workloadOf(t, mw)
		v, _, _ := unstructured.NestedString(w.Object, "spec", "template", "spec", "nodeSelector", "disktype")
		sc, _, _ := unstructured.NestedBool(w.Object, "spec", "template", "spec", "securityContext", "runAsNonRoot")
		return v == "nvme" && sc && w.GetLabels()[hub.LabelRevision] == "web-v3", nil
	})

	// A patch trait removed from the AppConfig is removed from the hub.
	eventually(t, "remove the SecurityContext trait", func(ctx context.Context) (bool, error) {
		a := getApp(ctx)
		a.Spec.Components[0].Traits = a.Spec.Components[0].Traits[:1]
		return c.Update(ctx, a) == nil, nil
	})
	eventually(t, "SecurityContext trait deleted from the hub", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shop-web-securitycontext"}, patchTrait("SecurityContext"))
		return apierrors.IsNotFound(err), nil
	})

	// What happened is told in events on the AppConfig.
	eventually(t, "events on the AppConfig", func(ctx context.Context) (bool, error) {
		evs := &corev1.EventList{}
		if err := c.List(ctx, evs, client.InNamespace("default")); err != nil {
			return false, err
		}
		reasons := map[string]bool{}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == "shop" {
				reasons[e.Reason] = true
			}
		}
		return reasons["WaitingForPatchTraits"] && reasons["ManifestWorkCreated"] && reasons["PatchTraitCreated"] && reasons["Delivered"], nil
	})
}
