package agent_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
)

func strategy(resource, namespace, name string, s workv1.UpdateStrategy) workv1.ManifestConfigOption {
	group := ""
	if resource == "deployments" {
		group = "apps"
	}
	return workv1.ManifestConfigOption{
		ResourceIdentifier: workv1.ResourceIdentifier{Group: group, Resource: resource, Namespace: namespace, Name: name},
		UpdateStrategy:     &s,
	}
}

// Update strategies through the agent: a field another manager owns shows as Applied=False, reason ApplyConflict,
// naming the field and the manager; force applies; dropping the field from the manifest resolves it.
func TestServerSideApplyConflictShowsOnTheManifest(t *testing.T) {
	f := startAgent(t)
	w := f.work("ssa", namespaceManifest, deploymentWeb)
	w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{
		strategy("deployments", f.cluster, "web", workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply}),
	}
	f.create(w)
	f.waitWork(w.Name, "applied", allApplied)

	force := true
	hpa := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":5}}`
	if _, err := f.kube.AppsV1().Deployments(f.cluster).Patch(t.Context(), "web", types.ApplyPatchType, []byte(hpa),
		metav1.PatchOptions{FieldManager: "hpa-controller", Force: &force}); err != nil {
		t.Fatal(err)
	}
	// The work now asks for 3 replicas.
	f.update(w.Name, func(w *workv1.ManifestWork) {
		w.Spec.Workload.Manifests[1] = f.work("x", strings.Replace(deploymentWeb, "replicas: 1", "replicas: 3", 1)).Spec.Workload.Manifests[0]
	})
	got := f.waitWork(w.Name, "conflict reported", func(w *workv1.ManifestWork) bool {
		return hasCondition(w, 1, workv1.ManifestApplied, metav1.ConditionFalse)
	})
	c := manifestCondition(got, 1, workv1.ManifestApplied)
	if c.Reason != "ApplyConflict" || !strings.Contains(c.Message, ".spec.replicas") || !strings.Contains(c.Message, "hpa-controller") {
		t.Errorf("Applied = %s %q, want ApplyConflict naming .spec.replicas and hpa-controller", c.Reason, c.Message)
	}
	if !hasCondition(got, 1, workv1.ManifestAvailable, metav1.ConditionTrue) {
		t.Error("the deployment should still be Available")
	}

	f.update(w.Name, func(w *workv1.ManifestWork) {
		w.Spec.ManifestConfigs[0].UpdateStrategy.ServerSideApply = &workv1.ServerSideApplyConfig{Force: true, FieldManager: "work-agent"}
	})
	f.waitWork(w.Name, "forced", allApplied)
	d, err := f.kube.AppsV1().Deployments(f.cluster).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 3 {
		t.Fatalf("replicas after force = %v (%v), want 3", d.Spec.Replicas, err)
	}

	// Without force, the controller takes replicas again and the manifest conflicts again (the agent
	// sees the change on the spoke and re-applies); removing replicas from the manifest hands them to
	// the controller and Applied turns back to True.
	f.update(w.Name, func(w *workv1.ManifestWork) {
		w.Spec.ManifestConfigs[0].UpdateStrategy.ServerSideApply = nil
	})
	f.waitWork(w.Name, "applied without force", allApplied)
	if _, err := f.kube.AppsV1().Deployments(f.cluster).Patch(t.Context(), "web", types.ApplyPatchType, []byte(hpa),
		metav1.PatchOptions{FieldManager: "hpa-controller", Force: &force}); err != nil {
		t.Fatal(err)
	}
	f.waitWork(w.Name, "conflict again", func(w *workv1.ManifestWork) bool {
		c := manifestCondition(w, 1, workv1.ManifestApplied)
		return c != nil && c.Reason == "ApplyConflict" && c.ObservedGeneration == w.Generation
	})
	f.update(w.Name, func(w *workv1.ManifestWork) {
		w.Spec.Workload.Manifests[1] = f.work("x", strings.Replace(deploymentWeb, "  replicas: 1\n", "", 1)).Spec.Workload.Manifests[0]
	})
	f.waitWork(w.Name, "applied without replicas", allApplied)
	if d, err := f.kube.AppsV1().Deployments(f.cluster).Get(t.Context(), "web", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 5 {
		t.Errorf("replicas = %v (%v), want the controller's 5", d.Spec.Replicas, err)
	}
}

// Apply-once-only force through the agent: a deleted object stays deleted until the manifest changes, also
// after the agent restarts.
func TestApplyOnceForceKeepsADeletedObjectDeletedAcrossRestarts(t *testing.T) {
	f := startAgent(t)
	cm := `{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: "{{ns}}", annotations: {app.oam.dev/generation: "1"}}, data: {k: "1"}}`
	w := f.work("force", namespaceManifest, cm)
	w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{
		strategy("configmaps", f.cluster, "a", workv1.UpdateStrategy{Type: "ApplyOnceForce"}),
	}
	f.create(w)
	f.waitWork(w.Name, "applied", allApplied)

	if err := f.kube.CoreV1().ConfigMaps(f.cluster).Delete(t.Context(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got := f.waitWork(w.Name, "deletion seen", func(w *workv1.ManifestWork) bool {
		return hasCondition(w, 1, workv1.ManifestAvailable, metav1.ConditionFalse)
	})
	if c := manifestCondition(got, 1, workv1.ManifestApplied); c.Status != metav1.ConditionTrue || c.Reason != "ApplyOnceSkipped" {
		t.Errorf("Applied = %s %s, want True ApplyOnceSkipped", c.Status, c.Reason)
	}

	f.stop()
	f.start()
	// The restarted agent reconciles the work (its status is rewritten with the new round's result at
	// the latest when something changes); prove it ran by changing an unrelated manifest.
	f.update(w.Name, func(w *workv1.ManifestWork) {
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, f.work("x", configMapB).Spec.Workload.Manifests[0])
	})
	f.waitWork(w.Name, "new manifest applied", func(w *workv1.ManifestWork) bool {
		return hasCondition(w, 2, workv1.ManifestApplied, metav1.ConditionTrue)
	})
	if f.configMapExists("a") {
		t.Fatal("the restarted agent re-created the deleted ApplyOnceForce object")
	}

	f.update(w.Name, func(w *workv1.ManifestWork) {
		w.Spec.Workload.Manifests[1] = f.work("x", strings.Replace(cm, `generation: "1"`, `generation: "2"`, 1)).Spec.Workload.Manifests[0]
	})
	f.eventually("re-created after the manifest changed", func(ctx context.Context) (bool, error) {
		_, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(ctx, "a", metav1.GetOptions{})
		return err == nil, ignoreNotFound(err)
	})
}

// Status feedback: well-known Deployment values and a JSONPaths rule reach the hub, and follow changes
// on the spoke.
func TestStatusFeedbackReachesTheHub(t *testing.T) {
	f := startAgent(t)
	w := f.work("feedback", namespaceManifest, strings.Replace(deploymentWeb, "replicas: 1", "replicas: 2", 1), configMapA)
	w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{
		{
			ResourceIdentifier: workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Namespace: f.cluster, Name: "web"},
			FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}},
		},
		{
			ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: f.cluster, Name: "a"},
			FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{
				{Name: "k", Path: ".data.k"},
			}}},
		},
	}
	// The spoke's scheduler places the pods on its simulated nodes, kwok runs them, and its deployment
	// controller counts them ready.
	f.create(w)
	f.waitWork(w.Name, "feedback", func(w *workv1.ManifestWork) bool {
		return feedbackValue(w, 1, "Replicas") == "2" && feedbackValue(w, 1, "ReadyReplicas") == "2" &&
			feedbackValue(w, 1, "AvailableReplicas") == "2" && feedbackValue(w, 2, "k") == "1" &&
			hasCondition(w, 1, "StatusFeedbackSynced", metav1.ConditionTrue)
	})

	// A JSONPaths value follows the object on the spoke (here: the manifest's own data changes).
	f.update(w.Name, func(w *workv1.ManifestWork) {
		w.Spec.Workload.Manifests[2] = f.work("x", strings.Replace(configMapA, `k: "1"`, `k: "7"`, 1)).Spec.Workload.Manifests[0]
	})
	f.waitWork(w.Name, "feedback follows", func(w *workv1.ManifestWork) bool { return feedbackValue(w, 2, "k") == "7" })
}

func feedbackValue(w *workv1.ManifestWork, ordinal int32, name string) string {
	for _, m := range w.Status.ResourceStatus.Manifests {
		if m.ResourceMeta.Ordinal != ordinal {
			continue
		}
		for _, v := range m.StatusFeedbacks.Values {
			if v.Name != name {
				continue
			}
			switch {
			case v.Value.Integer != nil:
				return strconv.FormatInt(*v.Value.Integer, 10)
			case v.Value.String != nil:
				return *v.Value.String
			case v.Value.Boolean != nil:
				if *v.Value.Boolean {
					return "true"
				}
				return "false"
			}
		}
	}
	return ""
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
