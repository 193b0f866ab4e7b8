package agent_test

import (
	"context"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

func (f *agentFixture) deleteWork(name string) {
	f.t.Helper()
	if err := f.hub.WorkV1().ManifestWorks(f.cluster).Delete(f.t.Context(), name, metav1.DeleteOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *agentFixture) waitWorkGone(name string) {
	f.t.Helper()
	f.eventually("work "+name+" gone", func(ctx context.Context) (bool, error) {
		_, err := f.hub.WorkV1().ManifestWorks(f.cluster).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

func (f *agentFixture) configMapExists(name string) bool {
	f.t.Helper()
	_, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(f.t.Context(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		f.t.Fatal(err)
	}
	return err == nil
}

// Foreground (the default): every object is deleted, and only then is the finalizer removed.
func TestDeletedWorkRemovesItsObjectsBeforeItsFinalizer(t *testing.T) {
	f := startAgent(t)
	w := f.create(f.work("fg", namespaceManifest, configMapA, configMapB))
	f.waitWork(w.Name, "applied", allApplied)
	// A finalizer of someone else's keeps configmap a from going at once.
	cm, _ := f.kube.CoreV1().ConfigMaps(f.cluster).Get(t.Context(), "a", metav1.GetOptions{})
	cm.Finalizers = append(cm.Finalizers, "example.com/hold")
	if _, err := f.kube.CoreV1().ConfigMaps(f.cluster).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.deleteWork(w.Name)
	f.eventually("configmap b deleted", func(context.Context) (bool, error) { return !f.configMapExists("b"), nil })
	// While a is held, the work keeps its finalizer.
	f.eventually("configmap a being deleted", func(ctx context.Context) (bool, error) {
		cm, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(ctx, "a", metav1.GetOptions{})
		return err == nil && cm.DeletionTimestamp != nil, err
	})
	held, err := f.hub.WorkV1().ManifestWorks(f.cluster).Get(t.Context(), w.Name, metav1.GetOptions{})
	if err != nil || !slices.Contains(held.Finalizers, workv1.ManifestWorkFinalizer) {
		t.Fatalf("work while an object is still going: %v, finalizers %v; want it kept", err, held.Finalizers)
	}
	cm, _ = f.kube.CoreV1().ConfigMaps(f.cluster).Get(t.Context(), "a", metav1.GetOptions{})
	cm.Finalizers = nil
	if _, err := f.kube.CoreV1().ConfigMaps(f.cluster).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitWorkGone(w.Name)
	if f.configMapExists("a") {
		t.Error("configmap a survived")
	}
}

func TestOrphanDeleteLeavesObjectsWithoutThisWorksOwner(t *testing.T) {
	f := startAgent(t)
	w := f.work("orphan", namespaceManifest, configMapA, configMapB)
	w.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}
	f.create(w)
	f.waitWork(w.Name, "applied", allApplied)
	f.deleteWork(w.Name)
	f.waitWorkGone(w.Name)
	for _, name := range []string{"a", "b"} {
		cm, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("configmap %s: %v", name, err)
		}
		if len(cm.OwnerReferences) != 0 {
			t.Errorf("configmap %s keeps owner references %v", name, cm.OwnerReferences)
		}
	}
}

// orphaningConfigMapAAndItsNamespace is a deleteOption that orphans ConfigMap a and the test's
// namespace, and deletes the rest.
func (f *agentFixture) orphaningConfigMapAAndItsNamespace() *workv1.DeleteOption {
	return &workv1.DeleteOption{
		PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
		SelectivelyOrphan: &workv1.SelectivelyOrphan{OrphaningRules: []workv1.OrphaningRule{
			{Resource: "configmaps", Namespace: f.cluster, Name: "a"},
			{Resource: "namespaces", Name: f.cluster},
		}},
	}
}

func TestSelectivelyOrphanDeleteKeepsExactlyTheListedObjects(t *testing.T) {
	f := startAgent(t)
	w := f.work("selective", namespaceManifest, configMapA, configMapB)
	w.Spec.DeleteOption = f.orphaningConfigMapAAndItsNamespace()
	f.create(w)
	f.waitWork(w.Name, "applied", allApplied)
	f.deleteWork(w.Name)
	f.waitWorkGone(w.Name)
	if !f.configMapExists("a") {
		t.Error("configmap a, listed to orphan, was deleted")
	}
	if f.configMapExists("b") {
		t.Error("configmap b, not listed, survived")
	}
}

// An object two works apply loses only the owner of the work that lets it go.
func TestObjectSharedByTwoWorksLosesOnlyOneOwner(t *testing.T) {
	f := startAgent(t)
	f.create(f.work("one", namespaceManifest, configMapA))
	f.create(f.work("two", configMapA))
	f.waitWork("one", "applied", allApplied)
	f.waitWork("two", "applied", allApplied)
	f.eventually("two owners on configmap a", func(ctx context.Context) (bool, error) {
		cm, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(ctx, "a", metav1.GetOptions{})
		return err == nil && len(cm.OwnerReferences) == 2, err
	})
	f.update("two", func(w *workv1.ManifestWork) {
		w.Spec.Workload.Manifests = []workv1.Manifest{f.work("x", configMapB).Spec.Workload.Manifests[0]}
	})
	f.eventually("configmap a keeps one owner", func(ctx context.Context) (bool, error) {
		cm, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(ctx, "a", metav1.GetOptions{})
		return err == nil && len(cm.OwnerReferences) == 1, err
	})
	f.waitWork("two", "applied with b", func(w *workv1.ManifestWork) bool {
		return allApplied(w) && w.Status.ResourceStatus.Manifests[0].ResourceMeta.Name == "b"
	})
	if !f.configMapExists("a") {
		t.Error("configmap a was deleted though work one still holds it")
	}
}

const widgetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: "widgets.{{ns}}.example.com"}
spec:
  group: "{{ns}}.example.com"
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`
const widget = `{apiVersion: "{{ns}}.example.com/v1", kind: Widget, metadata: {name: w1, namespace: "{{ns}}"}, spec: {size: 3}}`

// A custom resource and its CRD in one work: the CR waits for the CRD instead of failing.
func TestCustomResourceWaitsForItsCRDInTheSameWork(t *testing.T) {
	f := startAgent(t)
	// The CR comes first in the spec.
	w := f.create(f.work("crd", widget, namespaceManifest, widgetCRD))
	// Watch every status the work goes through: the CR must never be Applied=False.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	watch, err := f.hub.WorkV1().ManifestWorks(f.cluster).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + w.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Stop()
	for ev := range watch.ResultChan() {
		got, ok := ev.Object.(*workv1.ManifestWork)
		if !ok {
			continue
		}
		if c := manifestCondition(got, 0, workv1.ManifestApplied); c != nil && c.Status == metav1.ConditionFalse {
			t.Fatalf("the custom resource showed Applied=False while its CRD was being established: %s", c.Message)
		}
		if allApplied(got) {
			return
		}
	}
	t.Fatalf("the work was not applied in time: %v", ctx.Err())
}
