package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/agent"
)

// Issue 8: manifests too large for the hub, for the spoke, or for the last-applied annotation. The hub
// refuses a work over its request limit outright; a manifest the spoke refuses, or one Update cannot
// record, fails alone with a message saying what limit it broke and what to do, and the rest applies.
func TestBadInputLargeManifests(t *testing.T) {
	f := startAgent(t)

	// The hub's etcd refuses requests over 1.5 MiB: a work whose ConfigMap carries 1,571,840 bytes of
	// data is accepted, one with 1,572,864 (1.5 MiB) is not ("etcdserver: request is too large").
	t.Run("the hub refuses a work with a 1.5 MiB manifest", func(t *testing.T) {
		w := f.work("too-large-for-the-hub")
		w.Spec.Workload.Manifests = []workv1.Manifest{sizedConfigMap(t, f, "huge", "data", 3<<19)}
		_, err := f.hub.WorkV1().ManifestWorks(f.cluster).Create(t.Context(), w, metav1.CreateOptions{})
		if err == nil {
			t.Fatal("the hub accepted a work of 1.5 MiB")
		}
		t.Logf("create error: %v", err)
		if !apierrors.IsRequestEntityTooLargeError(err) && !strings.Contains(err.Error(), "too large") {
			t.Errorf("create error = %v, want one saying the request is too large", err)
		}
	})

	t.Run("the spoke refuses ConfigMap data over 1 MiB", func(t *testing.T) {
		// ServerSideApply keeps no last-applied record, so the spoke's API server is the one to refuse it.
		w := f.work("over-a-mebibyte", namespaceManifest, configMapA)
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, sizedConfigMap(t, f, "over-limit", "data", 1<<20+1))
		w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{
			strategy("configmaps", f.cluster, "over-limit", workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply}),
		}
		got := failsAloneAndTheRestApplies(t, f, w, 2)
		c := manifestCondition(got, 2, workv1.ManifestApplied)
		t.Logf("Applied = %s %s %q", c.Status, c.Reason, c.Message)
		if c.Reason != agent.ReasonAppliedManifestFailed || !strings.Contains(c.Message, "Too long") || !strings.Contains(c.Message, "1048576 bytes") {
			t.Errorf("Applied = %s %q, want %s saying the data is too long, at most 1048576 bytes", c.Reason, c.Message, agent.ReasonAppliedManifestFailed)
		}
	})

	t.Run("the hub refuses annotations over 256 KiB", func(t *testing.T) {
		// The ManifestWork CRD validates a manifest's metadata as the API server validates objects.
		w := f.work("large-annotation", configMapB)
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, sizedConfigMap(t, f, "large-annotation", "annotation", 300<<10))
		_, err := f.hub.WorkV1().ManifestWorks(f.cluster).Create(t.Context(), w, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.workload.manifests[1].metadata.annotations: Too long") {
			t.Errorf("create error = %v, want the work refused, naming the manifest's annotations as too long", err)
		}
	})

	t.Run("Update without a record store refuses a manifest too large to record", func(t *testing.T) {
		w := f.work("too-large-to-record", namespaceManifest, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: "{{ns}}"}, data: {k: "3"}}`)
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, sizedConfigMap(t, f, "unrecorded", "data", 200<<10))
		got := failsAloneAndTheRestApplies(t, f, w, 2)
		c := manifestCondition(got, 2, workv1.ManifestApplied)
		t.Logf("Applied = %s %s %q", c.Status, c.Reason, c.Message)
		if c.Reason != agent.ReasonAppliedManifestFailed || !strings.Contains(c.Message, "too large for a last-applied annotation") || !strings.Contains(c.Message, "ServerSideApply") {
			t.Errorf("Applied = %s %q, want %s saying it is too large to record and suggesting ServerSideApply", c.Reason, c.Message, agent.ReasonAppliedManifestFailed)
		}
	})
}

// failsAloneAndTheRestApplies creates w and waits until manifest bad is Applied=False while every other
// manifest is Applied and Available; it returns the work.
func failsAloneAndTheRestApplies(t *testing.T, f *agentFixture, w *workv1.ManifestWork, bad int32) *workv1.ManifestWork {
	t.Helper()
	if _, err := f.hub.WorkV1().ManifestWorks(f.cluster).Create(t.Context(), w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create work %s: %v", w.Name, err)
	}
	var got *workv1.ManifestWork
	pollUntil(t, fmt.Sprintf("work %s: manifest %d failed, the rest applied", w.Name, bad), func(ctx context.Context) (bool, error) {
		cur, err := f.hub.WorkV1().ManifestWorks(f.cluster).Get(ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = cur
		for i := range cur.Spec.Workload.Manifests {
			want := metav1.ConditionTrue
			if int32(i) == bad {
				want = metav1.ConditionFalse
			}
			if !hasCondition(cur, int32(i), workv1.ManifestApplied, want) {
				return false, nil
			}
			if int32(i) != bad && !hasCondition(cur, int32(i), workv1.ManifestAvailable, metav1.ConditionTrue) {
				return false, nil
			}
		}
		return true, nil
	})
	name := manifestStatus(got, bad).ResourceMeta.Name
	if _, ok := spokeConfigMap(t, f, name); ok {
		t.Errorf("configmap %s is on the spoke although its manifest failed", name)
	}
	return got
}

// sizedConfigMap is a ConfigMap manifest of the test's namespace carrying size bytes in one data value
// ("data") or one annotation ("annotation").
func sizedConfigMap(t *testing.T, f *agentFixture, name, where string, size int) workv1.Manifest {
	t.Helper()
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
	cm.SetName(name)
	cm.SetNamespace(f.cluster)
	payload := strings.Repeat("x", size)
	switch where {
	case "data":
		cm.Object["data"] = map[string]any{"payload": payload}
	case "annotation":
		cm.SetAnnotations(map[string]string{"example.com/payload": payload})
	default:
		t.Fatalf("sizedConfigMap: where = %q", where)
	}
	raw, err := cm.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}}
}
