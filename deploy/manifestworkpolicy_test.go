package deploy

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

// The hub's policy ferry-manifestwork-manifests, as deploy/hub installs it, enforced by a real API
// server: a ManifestWork with no manifests, with a manifest that has no name or a generateName, or
// with two manifests for the same object is refused with a message naming the manifest, as OCM's
// work webhook refuses it; a work of hundreds of manifests is checked within the CEL cost budget.
func TestManifestWorkPolicyRefusesBadManifests(t *testing.T) {
	kubectl(t)
	const policy = "ferry-manifestwork-manifests"
	env := localcluster.StartForTest(t, localcluster.Options{})
	admin, err := kubernetes.NewForConfig(env.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "cluster1"
	newPolicyNamespace(t, admin, ns)
	works := policyWorkClient(t, env.Hub.Config).WorkV1().ManifestWorks(ns)
	manifest := func(apiVersion, kind, namespace, name string) string {
		m := fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q`, apiVersion, kind, name)
		if namespace != "" {
			m += fmt.Sprintf(`,"namespace":%q`, namespace)
		}
		return m + `}}`
	}
	configMap := func(name string) string { return manifest("v1", "ConfigMap", "default", name) }
	work := func(name string, manifests ...string) *workv1.ManifestWork {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		for _, m := range manifests {
			w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(m)}})
		}
		return w
	}
	many := func(n int) []string {
		ms := make([]string, n)
		for i := range ms {
			ms[i] = configMap(fmt.Sprintf("config-%04d", i))
		}
		return ms
	}

	// A work written before the policy, with two manifests for one object.
	if _, err := works.Create(t.Context(), work("legacy", configMap("a"), configMap("a")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, objs := render(t, "hub")
	apply(t, env.Hub.Kubeconfig, policiesNamed(t, objs, policy), "")

	var refusal error
	pollPolicy(t, "a work with no manifests is refused", func(ctx context.Context) bool {
		_, refusal = works.Create(ctx, work("empty"), metav1.CreateOptions{})
		if refusal == nil { // admitted before the policy took effect: try again without it
			_ = works.Delete(ctx, "empty", metav1.DeleteOptions{})
		}
		return refusedSaying(refusal, "no manifests")
	})
	wantRefused(t, "a work with no manifests", refusal, policy, "ManifestWork empty", "spec.workload.manifests should not be empty")

	for _, c := range []struct {
		what      string
		manifests []string
		says      []string
	}{{
		what:      "a manifest without a name",
		manifests: []string{configMap("a"), `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"namespace":"default"}}`},
		says:      []string{"spec.workload.manifests[1] (apps/v1 Deployment)", "has no metadata.name", "name must be set in manifest"},
	}, {
		what:      "a manifest with a generateName",
		manifests: []string{configMap("a"), configMap("b"), `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","generateName":"s-","namespace":"default"}}`},
		says:      []string{"spec.workload.manifests[2] (v1 Secret)", "sets metadata.generateName s-", "generateName must not be set in manifest"},
	}, {
		what:      "two manifests for one object",
		manifests: []string{configMap("a"), configMap("b"), `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"},"data":{"k":"v"}}`},
		says:      []string{"spec.workload.manifests[0] and spec.workload.manifests[2]", "are the same object (v1 ConfigMap default/a)"},
	}, {
		what:      "two manifests for one cluster-scoped object among 300",
		manifests: append(append(many(150), manifest("rbac.authorization.k8s.io/v1", "ClusterRole", "", "reader")), append(many(300)[150:], manifest("rbac.authorization.k8s.io/v1", "ClusterRole", "", "reader"))...),
		says:      []string{"spec.workload.manifests[150] and spec.workload.manifests[301]", "(rbac.authorization.k8s.io/v1 ClusterRole reader)"},
	}} {
		_, err := works.Create(t.Context(), work("bad", c.manifests...), metav1.CreateOptions{})
		wantRefused(t, c.what, err, policy, c.says...)
	}

	// The same name in another namespace, of another kind or another apiVersion is another object.
	if _, err := works.Create(t.Context(), work("distinct", configMap("a"), manifest("v1", "ConfigMap", "other", "a"),
		manifest("v1", "Secret", "default", "a"), manifest("v1", "ConfigMap", "", "a"),
		manifest("apps/v1", "Deployment", "default", "a"), manifest("extensions/v1beta1", "Deployment", "default", "a")), metav1.CreateOptions{}); err != nil {
		t.Errorf("a work of distinct objects with one name: %v", err)
	}
	// Hundreds of manifests are checked within the cost budget, on create and on update.
	w, err := works.Create(t.Context(), work("large", many(300)...), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a work of 300 manifests: %v", err)
	}
	w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, w.Spec.Workload.Manifests[7])
	_, err = works.Update(t.Context(), w, metav1.UpdateOptions{})
	wantRefused(t, "an update adding a duplicate to a work of 300 manifests", err, policy, "spec.workload.manifests[7] and spec.workload.manifests[300]")

	// A work too large for the duplicate check to fit in the cost budget is admitted, not refused.
	if _, err := works.Create(t.Context(), work("huge", many(1500)...), metav1.CreateOptions{}); err != nil {
		t.Errorf("a work of 1500 manifests: %v", err)
	}

	// A work admitted before the policy keeps its finalizers, labels and status writable; a change of
	// its manifests is checked.
	legacy, err := works.Get(t.Context(), "legacy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	legacy.Labels = map[string]string{"team": "a"}
	legacy.Finalizers = []string{"cluster.open-cluster-management.io/manifest-work-cleanup"}
	if legacy, err = works.Update(t.Context(), legacy, metav1.UpdateOptions{}); err != nil {
		t.Errorf("a label and a finalizer on a work admitted before the policy: %v", err)
	}
	legacy.Spec.Workload.Manifests = append(legacy.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(configMap("c"))}})
	_, err = works.Update(t.Context(), legacy, metav1.UpdateOptions{})
	wantRefused(t, "a change of the manifests of a work with a duplicate", err, policy, "spec.workload.manifests[0] and spec.workload.manifests[1]")
	if err := works.Delete(t.Context(), "legacy", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := works.Patch(t.Context(), "legacy", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("removing the finalizer of a work admitted before the policy: %v", err)
	}
}
