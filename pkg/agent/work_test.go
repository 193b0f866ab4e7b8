package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/agent"
)

const (
	namespaceManifest = `{apiVersion: v1, kind: Namespace, metadata: {name: "{{ns}}"}}`
	configMapA        = `{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: "{{ns}}"}, data: {k: "1"}}`
	configMapB        = `{apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: "{{ns}}"}, data: {k: "2"}}`
	deploymentWeb     = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: "{{ns}}"}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
`
)

func TestWorkIsAppliedAndReportedPerManifest(t *testing.T) {
	f := startAgent(t)
	// The namespace comes last in the spec and is still applied first.
	w := f.create(f.work("app", configMapA, deploymentWeb, namespaceManifest))
	w = f.waitWork(w.Name, "all manifests Applied and Available", allApplied)

	want := []workv1.ManifestResourceMeta{
		{Ordinal: 0, Group: "", Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Name: "a", Namespace: f.cluster},
		{Ordinal: 1, Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Name: "web", Namespace: f.cluster},
		{Ordinal: 2, Group: "", Version: "v1", Kind: "Namespace", Resource: "namespaces", Name: f.cluster},
	}
	if len(w.Status.ResourceStatus.Manifests) != len(want) {
		t.Fatalf("status has %d manifests, want %d", len(w.Status.ResourceStatus.Manifests), len(want))
	}
	for i, m := range w.Status.ResourceStatus.Manifests {
		if m.ResourceMeta != want[i] {
			t.Errorf("manifest %d resourceMeta = %+v, want %+v", i, m.ResourceMeta, want[i])
		}
	}
	if c := manifestCondition(w, 1, workv1.ManifestApplied); c.Reason != workv1.AppliedManifestComplete {
		t.Errorf("Applied reason = %s, want %s", c.Reason, workv1.AppliedManifestComplete)
	}
	if _, err := f.kube.AppsV1().Deployments(f.cluster).Get(t.Context(), "web", metav1.GetOptions{}); err != nil {
		t.Errorf("deployment on the spoke: %v", err)
	}
	amw, err := f.spokeWk.WorkV1().AppliedManifestWorks().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range amw.Items {
		if a.Spec.ManifestWorkName == "app" && a.Spec.AgentID == f.cfg.AgentID {
			found = true
			if len(a.Status.AppliedResources) != 3 {
				t.Errorf("AppliedManifestWork lists %d resources, want 3: %+v", len(a.Status.AppliedResources), a.Status.AppliedResources)
			}
			for _, r := range a.Status.AppliedResources {
				if r.UID == "" {
					t.Errorf("applied resource %s/%s has no UID", r.Resource, r.Name)
				}
			}
		}
	}
	if !found {
		t.Errorf("no AppliedManifestWork for the work")
	}
}

// With nothing changed, resyncs read but write nothing to either API server. Nothing changed means
// the spoke has settled too: until its Deployment's pod is ready, the Deployment's health changes and
// the agent rightly reports it.
func TestSteadyStateWritesNothing(t *testing.T) {
	f := startAgent(t, withResync(100*time.Millisecond))
	w := f.create(f.work("steady", namespaceManifest, configMapA, deploymentWeb))
	f.waitWork(w.Name, "applied, and the Deployment ready", allHealthy)
	if h, s := f.writesOfQuietResyncs(3); h != 0 || s != 0 {
		t.Errorf("resyncs with nothing changed wrote %d times to the hub and %d times to the spoke, want 0", h, s)
	}
}

// An idle agent costs its spoke nothing: a resync takes each object's last apply again while the
// object's watch shows it unchanged, so it sends no request; a change on the spoke is still read and
// put back, between resyncs and after them.
func TestIdleResyncsReadNothingAndDriftIsStillReverted(t *testing.T) {
	f := startAgent(t, withResync(100*time.Millisecond))
	w := f.create(f.work("idle", namespaceManifest, configMapA, configMapB))
	f.waitWork(w.Name, "applied", allApplied)
	// The first rounds read what the agent's own writes changed; then the work settles.
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := f.spokeReads.Load() + f.spokeWrites.Load()
		f.waitResyncs(3, 3)
		if f.spokeReads.Load()+f.spokeWrites.Load() == r {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent never went three resyncs without a request to the spoke")
		}
	}
	r := f.spokeReads.Load() + f.spokeWrites.Load()
	f.waitResyncs(10, 3)
	if d := f.spokeReads.Load() + f.spokeWrites.Load() - r; d != 0 {
		t.Errorf("ten resyncs of an idle work of 3 objects sent %d requests to the spoke, want 0", d)
	}

	for _, value := range []string{"drifted", "drifted again"} {
		cm, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(t.Context(), "a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["k"] = value
		if _, err := f.kube.CoreV1().ConfigMaps(f.cluster).Update(t.Context(), cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatal(err)
		}
		f.eventually("drift ("+value+") put back", func(ctx context.Context) (bool, error) {
			cm, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(ctx, "a", metav1.GetOptions{})
			return err == nil && cm.Data["k"] == "1", nil
		})
		f.waitResyncs(3, 3)
	}
}

// The objects the agent creates are not read back: the object a create returns is the object as
// stored, and its watch showing that version is enough to take the apply as settled.
func TestCreatedObjectsAreNotReadBack(t *testing.T) {
	f := startAgent(t, withResync(100*time.Millisecond))
	// A first work starts the watch of ConfigMaps in the namespace, which tells the agent which objects
	// are missing (so that it creates them without reading them first).
	warm := f.create(f.work("warm", namespaceManifest, configMapA))
	f.waitWork(warm.Name, "applied", allApplied)
	f.writesOfQuietResyncs(2)

	reads := f.spokeReads.Load()
	var manifests []string
	for i := range 5 {
		manifests = append(manifests, fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: new-%d, namespace: "{{ns}}"}, data: {k: "v"}}`, i))
	}
	w := f.create(f.work("new", manifests...))
	f.waitWork(w.Name, "applied", allApplied)
	f.waitResyncs(3, 2+5)
	// Each pass after the creates comes from a write's event (the status, the objects' own watch): the
	// objects are read there only if the watch has not caught up with the create yet, which is rare.
	if d := f.spokeReads.Load() - reads; d >= 5 {
		t.Errorf("creating 5 ConfigMaps and three resyncs read the spoke %d times; want fewer than one read per object", d)
	}
}

// One bad manifest of each kind fails alone with a reason and a message; the good ones apply.
func TestBadManifestsFailAloneWithAReason(t *testing.T) {
	f := startAgent(t)
	bad := []struct {
		manifest string
		reason   string
		says     string
	}{
		{`{apiVersion: v1, kind: ConfigMap, metadata: {namespace: "{{ns}}"}}`, workv1.AppliedManifestFailed, "metadata.name"},
		{`{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: "{{ns}}"}}`, agent.ReasonUnknownKind, "Widget"},
		{`{apiVersion: v1, kind: ConfigMap, metadata: {name: nons}}`, workv1.AppliedManifestFailed, "metadata.namespace"},
		{`{apiVersion: v1, kind: ConfigMap, metadata: {name: "Bad_Name", namespace: "{{ns}}"}}`, workv1.AppliedManifestFailed, "Bad_Name"},
	}
	for i, b := range bad {
		manifests := []string{namespaceManifest, b.manifest, configMapA}
		w := f.work(fmt.Sprintf("bad-%d", i), manifests...)
		f.create(w)
		got := f.waitWork(w.Name, "bad manifest reported", func(w *workv1.ManifestWork) bool {
			return hasCondition(w, 1, workv1.ManifestApplied, metav1.ConditionFalse) &&
				hasCondition(w, 0, workv1.ManifestApplied, metav1.ConditionTrue) &&
				hasCondition(w, 2, workv1.ManifestApplied, metav1.ConditionTrue)
		})
		c := manifestCondition(got, 1, workv1.ManifestApplied)
		if c.Reason != b.reason || !strings.Contains(c.Message, b.says) {
			t.Errorf("%s: Applied = %s %q, want %s mentioning %q", w.Name, c.Reason, c.Message, b.reason, b.says)
		}
		if !workCondition(got, workv1.WorkApplied, metav1.ConditionFalse) {
			t.Errorf("%s: work-level Applied is not False", w.Name)
		}
	}
}

// A manifest removed from the work has its object deleted; the others stay.
func TestRemovedManifestIsDeletedFromTheSpoke(t *testing.T) {
	f := startAgent(t)
	w := f.create(f.work("shrink", namespaceManifest, configMapA, configMapB))
	f.waitWork(w.Name, "applied", allApplied)
	f.update(w.Name, func(w *workv1.ManifestWork) { w.Spec.Workload.Manifests = w.Spec.Workload.Manifests[:2] })
	f.eventually("configmap b deleted", func(ctx context.Context) (bool, error) {
		_, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(ctx, "b", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if _, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(t.Context(), "a", metav1.GetOptions{}); err != nil {
		t.Errorf("configmap a: %v", err)
	}
	f.waitWork(w.Name, "status lists two manifests", func(w *workv1.ManifestWork) bool {
		return allApplied(w) && len(w.Status.ResourceStatus.Manifests) == 2
	})
}

// An object on the spoke changed or deleted shows on the hub without waiting for a resync.
func TestSpokeChangesReachTheHubWithoutResync(t *testing.T) {
	f := startAgent(t, withResync(time.Hour))
	w := f.create(f.work("watched", namespaceManifest, configMapA))
	f.waitWork(w.Name, "applied", allApplied)

	// A change to a field the manifest owns is put back.
	cm, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(t.Context(), "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = "changed"
	if _, err := f.kube.CoreV1().ConfigMaps(f.cluster).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("drift corrected", func(ctx context.Context) (bool, error) {
		cm, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(ctx, "a", metav1.GetOptions{})
		return err == nil && cm.Data["k"] == "1", nil
	})

	// A deleted object is re-created, and its new UID recorded.
	old, _ := f.kube.CoreV1().ConfigMaps(f.cluster).Get(t.Context(), "a", metav1.GetOptions{})
	if err := f.kube.CoreV1().ConfigMaps(f.cluster).Delete(t.Context(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("re-created", func(ctx context.Context) (bool, error) {
		cm, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(ctx, "a", metav1.GetOptions{})
		return err == nil && cm.UID != old.UID, nil
	})
}
