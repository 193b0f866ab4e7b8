package agent_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/pkg/agent"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// gadgetCRD defines Gadget in the test's own group, with the given scope and served versions.
func gadgetCRD(ns, scope string, versions ...string) string {
	var vs strings.Builder
	for i, v := range versions {
		fmt.Fprintf(&vs, "  - {name: %s, served: true, storage: %t, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}\n", v, i == 0)
	}
	return fmt.Sprintf(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: "gadgets.%[1]s.example.com"}
spec:
  group: "%[1]s.example.com"
  scope: %[2]s
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions:
%[3]s`, ns, scope, vs.String())
}

// installCRD creates a CRD on the spoke as an administrator would, outside any work, and waits until it
// is Established.
func (f *agentFixture) installCRD(manifest string) {
	f.t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.dynamic.Resource(crdResource).Create(f.t.Context(), obj, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("create CRD %s: %v", obj.GetName(), err)
	}
	f.eventually("CRD "+obj.GetName()+" established", func(ctx context.Context) (bool, error) {
		crd, err := f.dynamic.Resource(crdResource).Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	f.t.Cleanup(func() {
		_ = f.dynamic.Resource(crdResource).Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{})
	})
}

// uninstallCRD deletes a CRD from the spoke and waits until it, and so its objects, are gone.
func (f *agentFixture) uninstallCRD(name string) {
	f.t.Helper()
	if err := f.dynamic.Resource(crdResource).Delete(f.t.Context(), name, metav1.DeleteOptions{}); err != nil {
		f.t.Fatalf("delete CRD %s: %v", name, err)
	}
	f.eventually("CRD "+name+" gone", func(ctx context.Context) (bool, error) {
		_, err := f.dynamic.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

func (f *agentFixture) gadgets(version string, namespaced bool) dynamic.ResourceInterface {
	r := f.dynamic.Resource(schema.GroupVersionResource{Group: f.cluster + ".example.com", Version: version, Resource: "gadgets"})
	if namespaced {
		return r.Namespace(f.cluster)
	}
	return r
}

func gadget(name string, size int) string {
	return fmt.Sprintf(`{apiVersion: "{{ns}}.example.com/v1", kind: Gadget, metadata: {name: %s, namespace: "{{ns}}"}, spec: {size: %d}}`, name, size)
}

func gadgetConfig(ns, name string, s workv1.UpdateStrategyType) workv1.ManifestConfigOption {
	return workv1.ManifestConfigOption{
		ResourceIdentifier: workv1.ResourceIdentifier{Group: ns + ".example.com", Resource: "gadgets", Namespace: ns, Name: name},
		UpdateStrategy:     &workv1.UpdateStrategy{Type: s},
	}
}

func size(obj *unstructured.Unstructured) int64 {
	n, _, _ := unstructured.NestedInt64(obj.Object, "spec", "size")
	return n
}

// A CRD installed on the spoke while the agent runs: a work carrying a custom resource of it is applied
// under the manifest's own strategy from the first round, exactly as for a kind known at start —
// ReadOnly creates nothing and owns nothing, CreateOnly does not update, ServerSideApply applies
// server-side, ApplyOnce and ApplyOnceForce leave spoke-side changes alone. Each strategy gets a kind of
// its own, so that each meets a mapper that has never seen its kind.
func TestCRDInstalledWhileTheAgentRunsKeepsEveryStrategy(t *testing.T) {
	f := startAgent(t)
	// The agent's view of the spoke's kinds is filled before any of the CRDs exists.
	warm := f.create(f.work("warm-up", namespaceManifest, configMapA))
	f.waitWork(warm.Name, "applied", allApplied)

	for _, tc := range []struct {
		name     string
		strategy workv1.UpdateStrategyType
		existing bool // the object is on the spoke before the work
		// checks the strategy's promise; spokeChange runs between the first check and after
		first, after func(t *testing.T, w *workv1.ManifestWork, gadgets dynamic.ResourceInterface)
		change       func(t *testing.T, gadgets dynamic.ResourceInterface)
	}{{
		name: "update", strategy: workv1.UpdateStrategyTypeUpdate,
		change: func(t *testing.T, g dynamic.ResourceInterface) { setSize(t, g, 9) },
		after: func(t *testing.T, _ *workv1.ManifestWork, g dynamic.ResourceInterface) {
			if obj := getGadget(t, g); size(obj) != 2 {
				t.Errorf("Update left the spoke's change of its field: size %d, want 2", size(obj))
			}
		},
	}, {
		name: "create-only", strategy: workv1.UpdateStrategyTypeCreateOnly, existing: true,
		first: func(t *testing.T, _ *workv1.ManifestWork, g dynamic.ResourceInterface) {
			if obj := getGadget(t, g); size(obj) != 1 {
				t.Errorf("CreateOnly changed the existing object: size %d, want 1", size(obj))
			}
		},
	}, {
		name: "ssa", strategy: workv1.UpdateStrategyTypeServerSideApply,
		first: func(t *testing.T, _ *workv1.ManifestWork, g dynamic.ResourceInterface) {
			if obj := getGadget(t, g); !appliedServerSide(obj) {
				t.Errorf("ServerSideApply: no Apply by work-agent in managedFields: %+v", obj.GetManagedFields())
			}
		},
	}, {
		name: "read-only", strategy: workv1.UpdateStrategyTypeReadOnly,
		first: func(t *testing.T, w *workv1.ManifestWork, g dynamic.ResourceInterface) {
			if _, err := g.Get(t.Context(), "g", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("ReadOnly: the agent created the object (get: %v)", err)
			}
			if c := manifestCondition(w, 1, workv1.ManifestAvailable); c == nil || c.Status != metav1.ConditionFalse {
				t.Errorf("ReadOnly of a missing object: Available = %+v, want False", c)
			}
			if c := manifestCondition(w, 1, workv1.ManifestApplied); c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "ReadOnly") {
				t.Errorf("ReadOnly of a missing object: Applied = %+v, want False saying ReadOnly found nothing", c)
			}
		},
		change: func(t *testing.T, g dynamic.ResourceInterface) {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(fmt.Sprintf(`{apiVersion: "%s/v1", kind: Gadget, metadata: {name: g}, spec: {size: 5}}`, gadgetGroup(t, g))), &obj.Object); err != nil {
				t.Fatal(err)
			}
			if _, err := g.Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		after: func(t *testing.T, w *workv1.ManifestWork, g dynamic.ResourceInterface) {
			if obj := getGadget(t, g); len(obj.GetOwnerReferences()) != 0 {
				t.Errorf("ReadOnly recorded the object as the work's: owners %+v", obj.GetOwnerReferences())
			}
		},
	}, {
		name: "apply-once", strategy: "ApplyOnce",
		change: func(t *testing.T, g dynamic.ResourceInterface) { setSize(t, g, 9) },
		after: func(t *testing.T, _ *workv1.ManifestWork, g dynamic.ResourceInterface) {
			if obj := getGadget(t, g); size(obj) != 9 {
				t.Errorf("ApplyOnce undid the spoke's change: size %d, want 9", size(obj))
			}
		},
	}, {
		name: "apply-once-force", strategy: "ApplyOnceForce",
		change: func(t *testing.T, g dynamic.ResourceInterface) {
			if err := g.Delete(t.Context(), "g", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		after: func(t *testing.T, w *workv1.ManifestWork, g dynamic.ResourceInterface) {
			if _, err := g.Get(t.Context(), "g", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("ApplyOnceForce: the object deleted on the spoke came back (get: %v)", err)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := f.in(t)
			group := tc.name + "." + f.cluster + ".example.com"
			f.installCRD(strings.ReplaceAll(gadgetCRD(f.cluster, "Namespaced", "v1"), f.cluster+".example.com", group))
			gadgets := f.dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}).Namespace(f.cluster)
			cr := fmt.Sprintf(`{apiVersion: "%s/v1", kind: Gadget, metadata: {name: g, namespace: "{{ns}}"}, spec: {size: %%d}}`, group)
			if tc.existing {
				obj := &unstructured.Unstructured{}
				if err := yaml.Unmarshal([]byte(strings.ReplaceAll(fmt.Sprintf(cr, 1), "{{ns}}", f.cluster)), &obj.Object); err != nil {
					t.Fatal(err)
				}
				if _, err := gadgets.Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			// A ConfigMap under Update beside the custom resource: once the agent has put it back after a
			// change made later than the gadget's, a reconcile has seen the gadget's change too.
			sentinel := `{apiVersion: v1, kind: ConfigMap, metadata: {name: sentinel-` + tc.name + `, namespace: "{{ns}}"}, data: {k: "1"}}`
			w := f.work("late-crd-"+tc.name, namespaceManifest, fmt.Sprintf(cr, 2), sentinel)
			cfg := gadgetConfig(f.cluster, "g", tc.strategy)
			cfg.ResourceIdentifier.Group = group
			cfg.FeedbackRules = []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "size", Path: ".spec.size"}}}}
			w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{cfg}
			f.create(w)
			got := f.waitWork(w.Name, "reported", func(w *workv1.ManifestWork) bool {
				c := manifestCondition(w, 1, workv1.ManifestApplied)
				return c != nil && c.ObservedGeneration == w.Generation && c.Status != metav1.ConditionUnknown &&
					hasCondition(w, 2, workv1.ManifestApplied, metav1.ConditionTrue)
			})
			if tc.strategy != workv1.UpdateStrategyTypeReadOnly {
				if c := manifestCondition(got, 1, workv1.ManifestApplied); c.Status != metav1.ConditionTrue {
					t.Fatalf("Applied = %s %s %q, want True", c.Status, c.Reason, c.Message)
				}
			}
			if tc.first != nil {
				tc.first(t, got, gadgets)
			}
			if tc.change != nil {
				tc.change(t, gadgets)
				f.changeAndWaitForRevert("sentinel-" + tc.name)
				if tc.after != nil {
					tc.after(t, f.waitWork(w.Name, "status after the change", func(*workv1.ManifestWork) bool { return true }), gadgets)
				}
			}
			if tc.strategy == workv1.UpdateStrategyTypeReadOnly {
				f.waitWork(w.Name, "ReadOnly feedback of the object made by hand", func(w *workv1.ManifestWork) bool {
					fb := manifestFeedback(w, 1)
					return hasCondition(w, 1, workv1.ManifestAvailable, metav1.ConditionTrue) && len(fb) == 1 &&
						fb[0].Value.Integer != nil && *fb[0].Value.Integer == 5
				})
			}

			// Deleting the work never removes what it only read or found. (Objects it created are deleted
			// in the foreground, which waits for the spoke's garbage collector to discover the new kind:
			// up to 30s, so that is left to the lifecycle tests of known kinds.)
			if tc.strategy == workv1.UpdateStrategyTypeReadOnly || tc.strategy == workv1.UpdateStrategyTypeCreateOnly {
				f.deleteWork(w.Name)
				f.waitWorkGone(w.Name)
				if _, err := gadgets.Get(t.Context(), "g", metav1.GetOptions{}); err != nil {
					t.Errorf("an object the work did not create went with it: %v", err)
				}
			}
		})
	}
}

// in is the fixture for a subtest: the same agent and clients, failing and cleaning up in t.
func (f *agentFixture) in(t *testing.T) *agentFixture {
	sub := *f
	sub.t = t
	return &sub
}

func gadgetGroup(t *testing.T, g dynamic.ResourceInterface) string {
	t.Helper()
	list, err := g.List(t.Context(), metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	gv, err := schema.ParseGroupVersion(list.GetAPIVersion())
	if err != nil {
		t.Fatal(err)
	}
	return gv.Group
}

func getGadget(t *testing.T, g dynamic.ResourceInterface) *unstructured.Unstructured {
	t.Helper()
	obj, err := g.Get(t.Context(), "g", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get gadget: %v", err)
	}
	return obj
}

func setSize(t *testing.T, g dynamic.ResourceInterface, n int) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"size":%d}}`, n)
	if _, err := g.Patch(t.Context(), "g", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "someone"}); err != nil {
		t.Fatal(err)
	}
}

func appliedServerSide(obj *unstructured.Unstructured) bool {
	return slices.ContainsFunc(obj.GetManagedFields(), func(m metav1.ManagedFieldsEntry) bool {
		return m.Manager == "work-agent" && m.Operation == metav1.ManagedFieldsOperationApply
	})
}

// changeAndWaitForRevert changes a ConfigMap the test's work applies under Update and waits until the
// agent has put it back: a reconcile of the work has run since.
func (f *agentFixture) changeAndWaitForRevert(name string) {
	f.t.Helper()
	if _, err := f.kube.CoreV1().ConfigMaps(f.cluster).Patch(f.t.Context(), name, types.MergePatchType, []byte(`{"data":{"k":"changed"}}`), metav1.PatchOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.eventually("ConfigMap "+name+" put back", func(ctx context.Context) (bool, error) {
		cm, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(ctx, name, metav1.GetOptions{})
		return err == nil && cm.Data["k"] == "1", nil
	})
}

// manifestFeedback returns the status feedback values of manifest ordinal.
func manifestFeedback(w *workv1.ManifestWork, ordinal int32) []workv1.FeedbackValue {
	for _, m := range w.Status.ResourceStatus.Manifests {
		if m.ResourceMeta.Ordinal == ordinal {
			return m.StatusFeedbacks.Values
		}
	}
	return nil
}

// A CRD deleted and re-created with another scope and version: the agent maps the kind as the spoke
// serves it now — the new version server-side applied at cluster scope — and a manifest still naming
// the version that is gone fails alone as UnknownKind.
func TestCRDRecreatedWithAnotherScopeAndVersionIsMappedAfresh(t *testing.T) {
	f := startAgent(t)
	crdName := "gadgets." + f.cluster + ".example.com"
	f.installCRD(gadgetCRD(f.cluster, "Namespaced", "v1"))
	w := f.work("rescoped", namespaceManifest, gadget("g", 2))
	w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{gadgetConfig(f.cluster, "g", workv1.UpdateStrategyTypeServerSideApply)}
	f.create(w)
	f.waitWork(w.Name, "applied", allApplied)

	f.uninstallCRD(crdName)
	f.installCRD(gadgetCRD(f.cluster, "Cluster", "v2"))
	clusterGadget := `{apiVersion: "{{ns}}.example.com/v2", kind: Gadget, metadata: {name: "{{ns}}-g"}, spec: {size: 4}}`
	f.update(w.Name, func(w *workv1.ManifestWork) {
		w.Spec.Workload = f.work("x", namespaceManifest, clusterGadget, gadget("old", 1)).Spec.Workload
		cfg := gadgetConfig(f.cluster, f.cluster+"-g", workv1.UpdateStrategyTypeServerSideApply)
		cfg.ResourceIdentifier.Namespace = ""
		w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{cfg}
	})
	got := f.waitWork(w.Name, "the new kind applied, the old version reported", func(w *workv1.ManifestWork) bool {
		c := manifestCondition(w, 1, workv1.ManifestApplied)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation &&
			hasCondition(w, 2, workv1.ManifestApplied, metav1.ConditionFalse)
	})
	for _, m := range got.Status.ResourceStatus.Manifests {
		if m.ResourceMeta.Ordinal == 1 && (m.ResourceMeta.Version != "v2" || m.ResourceMeta.Namespace != "" || m.ResourceMeta.Resource != "gadgets") {
			t.Errorf("resourceMeta of the re-scoped gadget = %+v, want gadgets v2 at cluster scope", m.ResourceMeta)
		}
	}
	if c := manifestCondition(got, 2, workv1.ManifestApplied); c.Reason != agent.ReasonUnknownKind || !strings.Contains(c.Message, `"Gadget"`) {
		t.Errorf("a version no longer served: Applied = %s %q, want %s naming Gadget", c.Reason, c.Message, agent.ReasonUnknownKind)
	}
	obj, err := f.gadgets("v2", false).Get(t.Context(), f.cluster+"-g", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the cluster-scoped gadget: %v", err)
	}
	if size(obj) != 4 || !appliedServerSide(obj) {
		t.Errorf("the cluster-scoped gadget: size %d, managedFields %+v; want 4, applied server-side by work-agent", size(obj), obj.GetManagedFields())
	}
}

// withCRDReads counts the agent's reads of CustomResourceDefinitions on the spoke (watches excluded).
func withCRDReads(n *atomic.Int64) agentOption {
	return func(c *agentSetup) {
		c.Spoke = rest.CopyConfig(c.Spoke)
		c.Spoke.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				if req.Method == http.MethodGet && req.URL.Query().Get("watch") != "true" &&
					strings.Contains(req.URL.Path, "/customresourcedefinitions/") {
					n.Add(1)
				}
				return rt.RoundTrip(req)
			})
		})
	}
}

// A custom resource whose CRD in the same work cannot become Established (its names clash with another
// CRD's) waits without a worker polling for it, and is applied as soon as the clash is gone — at once,
// through the agent's watch of CRDs, not at the next resync.
func TestCustomResourceWaitsForItsCRDWithoutPolling(t *testing.T) {
	crdReads := &atomic.Int64{}
	f := startAgent(t, withResync(10*time.Minute), withCRDReads(crdReads))
	// Gizmo holds "gadget" as a short name, the singular name the work's Gadget CRD asks for.
	clash := strings.NewReplacer("plural: gadgets", "plural: gizmos", "singular: gadget", "singular: gizmo, shortNames: [gadget]",
		"kind: Gadget", "kind: Gizmo", "listKind: GadgetList", "listKind: GizmoList",
		`name: "gadgets.`, `name: "gizmos.`).Replace(gadgetCRD(f.cluster, "Namespaced", "v1"))
	f.installCRD(clash)
	w := f.create(f.work("clash", namespaceManifest, gadgetCRD(f.cluster, "Namespaced", "v1"), gadget("g", 2)))
	f.waitWork(w.Name, "the gadget waiting for its CRD", func(w *workv1.ManifestWork) bool {
		c := manifestCondition(w, 2, workv1.ManifestApplied)
		return c != nil && c.Reason == agent.ReasonWaitingForCRD && c.Status == metav1.ConditionUnknown
	})

	// While it waits, nothing polls the CRD: a change of the CRD's own status may requeue the work and
	// re-read it once or twice, where a worker polling for it read it about 20 times a second.
	const allowed = 3
	before := crdReads.Load()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 3*time.Second, true, func(context.Context) (bool, error) {
		return crdReads.Load()-before > allowed, nil
	})
	if err == nil {
		t.Errorf("the agent read the CRD more than %d times in 3s while the custom resource waited", allowed)
	}

	// Gizmo gives the name up (short names may change; deleting the CRD would wait on its cleanup).
	if _, err := f.dynamic.Resource(crdResource).Patch(t.Context(), "gizmos."+f.cluster+".example.com", types.JSONPatchType,
		[]byte(`[{"op":"remove","path":"/spec/names/shortNames"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	f.waitWork(w.Name, "the gadget applied once its CRD is Established", allApplied)
	t.Logf("applied %v after the clash was removed", time.Since(start).Round(time.Millisecond))
	if obj := getGadget(t, f.gadgets("v1", true)); size(obj) != 2 {
		t.Errorf("gadget size %d, want 2", size(obj))
	}
}
