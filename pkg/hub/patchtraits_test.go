package hub_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
	"github.com/ferry-mc/ferry/pkg/render"
)

const patchTraitGroup = "extended.oam.dev"

// installPatchTraitKind defines a namespaced kind of patch trait (group extended.oam.dev, with a status
// subresource as a trait controller has) on the hub, with its TraitDefinition, and waits until it is
// served. Patch traits live on the hub only.
func (f *fixture) installPatchTraitKind(kind string) {
	f.t.Helper()
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
	if err := f.hub.Create(context.Background(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
		f.t.Fatalf("create CRD %s: %v", crd.GetName(), err)
	}
	def := &v1alpha2.TraitDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + patchTraitGroup},
		Spec:       v1alpha2.TraitDefinitionSpec{Reference: v1alpha2.DefinitionReference{Name: plural + "." + patchTraitGroup}, Patch: true},
	}
	if err := f.hub.Create(context.Background(), def); err != nil && !apierrors.IsAlreadyExists(err) {
		f.t.Fatalf("create TraitDefinition %s: %v", def.Name, err)
	}
	f.eventually("kind "+kind+" served", func(ctx context.Context) (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: patchTraitGroup, Version: "v1alpha2", Kind: kind + "List"})
		return f.hub.List(ctx, list) == nil, nil
	})
}

// publishPatch plays a patch trait's controller: it publishes patch in a ConfigMap and marks the trait
// Ready for its current generation.
func (f *fixture) publishPatch(kind, name, patch string) {
	f.t.Helper()
	cmName := name + "-patch"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cmName, Namespace: f.ns}, Data: map[string]string{hub.PatchConfigKey: patch}}
	if err := f.hub.Create(context.Background(), cm); apierrors.IsAlreadyExists(err) {
		if err := f.hub.Update(context.Background(), cm); err != nil {
			f.t.Fatalf("update ConfigMap %s: %v", cmName, err)
		}
	} else if err != nil {
		f.t.Fatalf("create ConfigMap %s: %v", cmName, err)
	}
	f.eventually("mark "+kind+" "+name+" Ready", func(ctx context.Context) (bool, error) {
		tr := patchTrait(kind)
		if err := f.hub.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, tr); err != nil {
			return false, err
		}
		tr.Object["status"] = map[string]any{"phase": hub.PatchPhaseReady, "patchConfig": cmName, "observedGeneration": tr.GetGeneration()}
		return true, f.hub.Status().Update(ctx, tr)
	})
}

func patchTrait(kind string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: patchTraitGroup, Version: "v1alpha2", Kind: kind})
	return u
}

func patchTraitOf(kind, spec string) v1alpha2.ComponentTrait {
	return traitOf(schema.GroupVersionKind{Group: patchTraitGroup, Version: "v1alpha2", Kind: kind}, spec)
}

// watchDeployments records every version of the test namespace's Deployments on a spoke that its
// API server reports, from now on.
func (f *fixture) watchDeployments(cluster string) func() []appsv1.Deployment {
	f.t.Helper()
	kube, err := kubernetes.NewForConfig(f.env.Spoke(cluster).Config)
	if err != nil {
		f.t.Fatal(err)
	}
	w, err := kube.AppsV1().Deployments(f.ns).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []appsv1.Deployment
	go func() {
		for ev := range w.ResultChan() {
			if d, ok := ev.Object.(*appsv1.Deployment); ok && ev.Type != watch.Deleted {
				mu.Lock()
				seen = append(seen, *d.DeepCopy())
				mu.Unlock()
			}
		}
	}()
	f.t.Cleanup(w.Stop)
	return func() []appsv1.Deployment {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

func nodeSelector(d *appsv1.Deployment) string { return d.Spec.Template.Spec.NodeSelector["disktype"] }

func runsAsNonRoot(d *appsv1.Deployment) bool {
	sc := d.Spec.Template.Spec.SecurityContext
	return sc != nil && sc.RunAsNonRoot != nil && *sc.RunAsNonRoot
}

// Patch traits through the whole chain: two patch traits (nodeSelector, securityContext) on a Deployment
// component. Their objects are created on the hub; the Deployment reaches each spoke only once both
// are Ready, created once with both patches (generation 1) and never seen without them; a changed
// patch is one more revision and one more change of the Deployment, once its controller publishes it.
func TestPatchTraitsReachTheSpokesOnceWithAllPatches(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.installPatchTraitKind("NodeSelector")
	f.installPatchTraitKind("SecurityContext")
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	seen := map[string]func() []appsv1.Deployment{}
	for _, c := range clusters {
		seen[c] = f.watchDeployments(c)
	}
	f.createApp(f.appConfig("shop", onClusters(clusters...), v1alpha2.ApplicationConfigurationComponent{
		ComponentName: "web",
		Traits:        []v1alpha2.ComponentTrait{patchTraitOf("NodeSelector", `{"disktype":"ssd"}`), patchTraitOf("SecurityContext", `{"runAsNonRoot":true}`)},
	}))
	waitingFor := func(what string) {
		t.Helper()
		f.waitApp("shop", "waiting for "+what, func(a *v1alpha2.ApplicationConfiguration) bool {
			c := ready(a)
			return c != nil && c.Reason == "WaitingForPatchTraits" && strings.Contains(c.Message, what)
		})
	}

	// Both trait objects are created on the hub, owned by the AppConfig; nothing is delivered yet.
	for _, kind := range []string{"NodeSelector", "SecurityContext"} {
		f.eventually(kind+" created on the hub", func(ctx context.Context) (bool, error) {
			tr := patchTrait(kind)
			if err := f.hub.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "shop-web-" + strings.ToLower(kind)}, tr); err != nil {
				return false, err
			}
			return len(tr.GetOwnerReferences()) == 1 && tr.GetOwnerReferences()[0].Name == "shop", nil
		})
	}
	waitingFor("NodeSelector " + f.ns + "/shop-web-nodeselector")
	f.publishPatch("NodeSelector", "shop-web-nodeselector", `{"spec":{"template":{"spec":{"nodeSelector":{"disktype":"ssd"}}}}}`)
	waitingFor("SecurityContext " + f.ns + "/shop-web-securitycontext")
	if works, err := f.works(context.Background(), "shop"); err != nil || len(works) != 0 {
		t.Fatalf("%d ManifestWorks (%v) while a patch trait is not Ready: the workload would run without its patch", len(works), err)
	}

	f.publishPatch("SecurityContext", "shop-web-securitycontext", `{"spec":{"template":{"spec":{"securityContext":{"runAsNonRoot":true}}}}}`)
	for _, c := range clusters {
		d := f.waitDeployment(c, "web", "created with both patches", func(d *appsv1.Deployment) bool {
			return nodeSelector(d) == "ssd" && runsAsNonRoot(d)
		})
		if d.Generation != 1 || d.Labels[hub.LabelRevision] != "web-v2" {
			t.Errorf("%s: Deployment web at generation %d, revision %q; want created once (generation 1) as the patched revision web-v2",
				c, d.Generation, d.Labels[hub.LabelRevision])
		}
	}
	app := f.waitApp("shop", "Ready with the patched revision", func(a *v1alpha2.ApplicationConfiguration) bool {
		return isReady(a) && len(a.Status.Workloads) == 1 && a.Status.Workloads[0].ComponentRevisionName == "web-v2" &&
			len(a.Status.Workloads[0].PatchTraits) == 2 && a.Status.Summary != nil && a.Status.Summary.Applied == "2/2"
	})
	if len(app.Status.Workloads[0].Traits) != 0 {
		t.Errorf("delivered traits %v: patch traits are merged, not delivered", app.Status.Workloads[0].Traits)
	}
	rev := &appsv1.ControllerRevision{}
	if err := f.hub.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "web-v2"}, rev); err != nil {
		t.Fatal(err)
	}
	if rev.Labels[hub.ComponentLabel] != "web" || rev.Labels[hub.PatchedLabel] == "" {
		t.Errorf("web-v2 labels %v: want a patched revision of web", rev.Labels)
	}
	comp := &v1alpha2.Component{}
	if err := f.hub.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "web"}, comp); err != nil {
		t.Fatal(err)
	}
	if comp.Status.LatestRevision == nil || comp.Status.LatestRevision.Name != "web-v1" {
		t.Errorf("component latest revision %v: componentName keeps resolving to the component's own spec, web-v1", comp.Status.LatestRevision)
	}

	// The nodeSelector changes: the trait object follows; until its controller publishes the new patch
	// the delivered workload stays as it was, then it changes once.
	f.updateApp("shop", func(a *v1alpha2.ApplicationConfiguration) {
		a.Spec.Components[0].Traits[0] = patchTraitOf("NodeSelector", `{"disktype":"nvme"}`)
	})
	waitingFor("its status is of generation 1, the trait is at 2")
	f.consistently("the spokes keep the published patch", time.Second, func(ctx context.Context) (bool, error) {
		for _, c := range clusters {
			d, err := f.deployment(ctx, c, "web")
			if err != nil || d.Generation != 1 {
				return false, err
			}
		}
		return true, nil
	})
	f.publishPatch("NodeSelector", "shop-web-nodeselector", `{"spec":{"template":{"spec":{"nodeSelector":{"disktype":"nvme"}}}}}`)
	for _, c := range clusters {
		d := f.waitDeployment(c, "web", "the new nodeSelector", func(d *appsv1.Deployment) bool { return nodeSelector(d) == "nvme" })
		if d.Generation != 2 || !runsAsNonRoot(d) || d.Labels[hub.LabelRevision] != "web-v3" {
			t.Errorf("%s: Deployment web at generation %d (runAsNonRoot %t), revision %q; want one change, to web-v3, keeping the other patch",
				c, d.Generation, runsAsNonRoot(d), d.Labels[hub.LabelRevision])
		}
	}

	// Never, on either spoke, a version of the Deployment without both patches.
	for _, c := range clusters {
		versions := seen[c]()
		if len(versions) == 0 {
			t.Errorf("%s: the watch saw no Deployment", c)
		}
		for _, d := range versions {
			if nodeSelector(&d) == "" || !runsAsNonRoot(&d) {
				t.Errorf("%s: Deployment web at generation %d (resourceVersion %s) lacked a patch: nodeSelector %q, runAsNonRoot %t",
					c, d.Generation, d.ResourceVersion, nodeSelector(&d), runsAsNonRoot(&d))
			}
		}
	}

	// A patch trait removed from the AppConfig is removed from the hub.
	f.updateApp("shop", func(a *v1alpha2.ApplicationConfiguration) {
		a.Spec.Components[0].Traits = a.Spec.Components[0].Traits[:1]
	})
	f.eventually("SecurityContext trait deleted from the hub", func(ctx context.Context) (bool, error) {
		err := f.hub.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "shop-web-securitycontext"}, patchTrait("SecurityContext"))
		return apierrors.IsNotFound(err), nil
	})

	// What happened is told in events on the AppConfig.
	f.eventually("events on the AppConfig", func(ctx context.Context) (bool, error) {
		evs := &corev1.EventList{}
		if err := f.hub.List(ctx, evs, client.InNamespace(f.ns)); err != nil {
			return false, err
		}
		reasons := map[string]bool{}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == "shop" {
				reasons[e.Reason] = true
			}
		}
		return reasons["WaitingForPatchTraits"] && reasons["ManifestWorkCreated"] && reasons["PatchTraitCreated"] &&
			reasons["Delivered"] && reasons["PatchTraitDeleted"], nil
	})
}

// The built-in WorkloadPatch needs no trait controller: its spec is the patch.
func TestInlineWorkloadPatchReachesTheSpokesWithTheWorkload(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	f.createApp(f.appConfig("inline", onClusters("cluster1"), v1alpha2.ApplicationConfigurationComponent{
		ComponentName: "web",
		Traits: []v1alpha2.ComponentTrait{traitOf(schema.GroupVersionKind{Group: "core.oam.dev", Version: "v1alpha2", Kind: render.InlinePatchKind},
			`{"spec":{"template":{"spec":{"nodeSelector":{"disktype":"ssd"},"containers":[{"name":"proxy","image":"envoy:1"}]}}}}`)},
	}))
	d := f.waitDeployment("cluster1", "web", "patched", func(d *appsv1.Deployment) bool { return nodeSelector(d) == "ssd" })
	var names []string
	for _, c := range d.Spec.Template.Spec.Containers {
		names = append(names, c.Name+"="+c.Image)
	}
	slices.Sort(names)
	if d.Generation != 1 || strings.Join(names, " ") != "main=nginx:1 proxy=envoy:1" {
		t.Errorf("Deployment at generation %d with containers %v; want created once, the sidecar beside the main container", d.Generation, names)
	}
}
