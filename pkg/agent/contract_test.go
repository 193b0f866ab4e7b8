package agent_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/agent"
)

// The parts of OCM's ManifestWork contract that are easy to miss: each test here walks a path an OCM
// user takes, where doing more than the work says (a write, a deletion) would go unnoticed.

// A manifestConfigs entry with "*" as name covers every manifest of its namespace, as it does for OCM's
// agent: ReadOnly over a namespace's ConfigMaps writes none of them, creates none that is missing, and
// reports each one's feedback.
func TestWildcardReadOnlyWritesNothing(t *testing.T) {
	f := startAgent(t)
	if _, err := f.kube.CoreV1().Namespaces().Create(t.Context(), namespace(f.cluster), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := map[string]string{}
	for _, name := range []string{"a", "b"} {
		cm, err := f.kube.CoreV1().ConfigMaps(f.cluster).Create(t.Context(), configMap(f.cluster, name, "on-the-spoke"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		before[name] = cm.ResourceVersion
	}
	w := f.work("wildcard-readonly", configMapA, configMapB,
		`{apiVersion: v1, kind: ConfigMap, metadata: {name: missing, namespace: "{{ns}}"}, data: {k: "3"}}`)
	w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{
		{ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: f.cluster, Name: "*"},
			UpdateStrategy: &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly}},
		// A second matching entry gives what the first leaves unset; its strategy does not count.
		{ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "*", Name: "*"},
			UpdateStrategy: &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeUpdate},
			FeedbackRules:  []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "k", Path: ".data.k"}}}}},
		// An entry that matches nothing is harmless.
		{ResourceIdentifier: workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Namespace: "*", Name: "*"},
			UpdateStrategy: &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeCreateOnly}},
	}
	f.create(w)
	got := f.waitWork(w.Name, "a and b read with their feedback, missing reported", func(w *workv1.ManifestWork) bool {
		return hasCondition(w, 0, workv1.ManifestApplied, metav1.ConditionTrue) && hasCondition(w, 1, workv1.ManifestApplied, metav1.ConditionTrue) &&
			hasCondition(w, 2, workv1.ManifestApplied, metav1.ConditionFalse) &&
			len(manifestFeedback(w, 0)) == 1 && len(manifestFeedback(w, 1)) == 1
	})
	for ordinal := range int32(2) {
		if v := manifestFeedback(got, ordinal)[0].Value.String; v == nil || *v != "on-the-spoke" {
			t.Errorf("manifest %d: feedback %+v, want the spoke's value", ordinal, manifestFeedback(got, ordinal))
		}
	}
	for name, rv := range before {
		cm, _ := spokeConfigMap(t, f, name)
		if cm.ResourceVersion != rv || cm.Data["k"] != "on-the-spoke" || len(cm.OwnerReferences) != 0 {
			t.Errorf("configmap %s was written under ReadOnly: resourceVersion %s (was %s), data %v, owners %v", name, cm.ResourceVersion, rv, cm.Data, cm.OwnerReferences)
		}
	}
	if f.configMapExists("missing") {
		t.Error("ReadOnly created the missing ConfigMap")
	}
}

// An object the work orphans (SelectivelyOrphan names it) never carries the work's owner reference and
// stays on the spoke when its manifest leaves the work; the other object, owned, is deleted.
func TestOrphanedManifestRemovedFromTheWorkIsKept(t *testing.T) {
	f := startAgent(t)
	w := f.work("orphan-on-removal", namespaceManifest, configMapA, configMapB)
	w.Spec.DeleteOption = &workv1.DeleteOption{
		PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
		SelectivelyOrphan: &workv1.SelectivelyOrphan{OrphaningRules: []workv1.OrphaningRule{
			{Resource: "configmaps", Namespace: f.cluster, Name: "a"},
		}},
	}
	f.create(w)
	f.waitWork(w.Name, "applied", allApplied)
	a, _ := spokeConfigMap(t, f, "a")
	if owners := workOwners(f, "a"); len(owners) != 0 {
		t.Errorf("orphaned configmap a carries the work's owner: %v", owners)
	}
	if owners := workOwners(f, "b"); len(owners) != 1 {
		t.Errorf("owned configmap b: work owners %v, want this work's", owners)
	}
	f.update(w.Name, func(w *workv1.ManifestWork) { w.Spec.Workload.Manifests = w.Spec.Workload.Manifests[:1] })
	f.eventually("configmap b deleted", func(context.Context) (bool, error) { return !f.configMapExists("b"), nil })
	f.waitWork(w.Name, "applied without them", allApplied)
	if kept, ok := spokeConfigMap(t, f, "a"); !ok || kept.UID != a.UID {
		t.Fatalf("orphaned configmap a after its manifest left the work: exists %v, uid %v (was %s)", ok, kept, a.UID)
	}
}

// An object applied while the work owned it loses the owner reference once the work's deleteOption
// orphans it, so that removing it from the work afterwards keeps it.
func TestOrphanPolicyAddedLaterLetsGoOfTheObject(t *testing.T) {
	f := startAgent(t)
	w := f.create(f.work("orphan-later", namespaceManifest, configMapA))
	f.waitWork(w.Name, "applied", allApplied)
	a, _ := spokeConfigMap(t, f, "a")
	if len(workOwners(f, "a")) != 1 {
		t.Fatalf("configmap a: work owners %v, want this work's", workOwners(f, "a"))
	}
	f.update(w.Name, func(w *workv1.ManifestWork) {
		w.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}
	})
	f.eventually("configmap a no longer owned by the work", func(context.Context) (bool, error) { return len(workOwners(f, "a")) == 0, nil })
	f.update(w.Name, func(w *workv1.ManifestWork) { w.Spec.Workload.Manifests = w.Spec.Workload.Manifests[:1] })
	f.waitWork(w.Name, "applied without it", allApplied)
	f.deleteWork(w.Name)
	f.waitWorkGone(w.Name)
	if kept, ok := spokeConfigMap(t, f, "a"); !ok || kept.UID != a.UID {
		t.Fatalf("configmap a after it left the orphaning work and the work was deleted: exists %v (uid was %s)", ok, a.UID)
	}
}

// Moving an object from one work to another, as OCM users move a Namespace or a PVC: the first work
// orphans it, the second adopts it, whichever of the two works changes first; the object keeps its UID
// and ends owned by the second work alone.
func TestManifestMovedBetweenWorksKeepsItsObject(t *testing.T) {
	for i, order := range []string{"added to the second work first", "removed from the first work first"} {
		t.Run(order, func(t *testing.T) {
			f := startAgent(t)
			// (Work names are unique across the package: every test's agent shares the spoke.)
			from := f.work(fmt.Sprintf("move-from-%d", i), namespaceManifest, configMapA)
			from.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}
			f.create(from)
			f.waitWork(from.Name, "applied", allApplied)
			a, _ := spokeConfigMap(t, f, "a")
			to := f.work(fmt.Sprintf("move-to-%d", i), namespaceManifest, configMapB)
			to.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}
			f.create(to)
			f.waitWork(to.Name, "applied", allApplied)

			addToSecond := func() {
				f.update(to.Name, func(w *workv1.ManifestWork) {
					// The same ConfigMap, changed a little: the second work's content wins.
					w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, f.work("", f.replace(configMapA, `k: "1"`, `k: "moved"`)).Spec.Workload.Manifests[0])
					w.Spec.DeleteOption = nil // owned by this one
				})
				f.waitWork(to.Name, "applied with a", allApplied)
			}
			removeFromFirst := func() {
				f.update(from.Name, func(w *workv1.ManifestWork) { w.Spec.Workload.Manifests = w.Spec.Workload.Manifests[:1] })
				f.waitWork(from.Name, "applied without a", allApplied)
			}
			if order == "added to the second work first" {
				addToSecond()
				removeFromFirst()
			} else {
				removeFromFirst()
				addToSecond()
			}
			f.eventually("configmap a holds the second work's content", func(context.Context) (bool, error) {
				cm, ok := spokeConfigMap(t, f, "a")
				return ok && cm.Data["k"] == "moved", nil
			})
			moved, _ := spokeConfigMap(t, f, "a")
			if moved.UID != a.UID {
				t.Errorf("configmap a was re-created: uid %s, was %s", moved.UID, a.UID)
			}
			if owners := workOwners(f, "a"); len(owners) != 1 {
				t.Errorf("configmap a: work owners %v, want the second work's alone", owners)
			}
			// Deleting the first work, which orphans, leaves it with the second.
			f.deleteWork(from.Name)
			f.waitWorkGone(from.Name)
			if kept, ok := spokeConfigMap(t, f, "a"); !ok || kept.UID != a.UID {
				t.Errorf("configmap a after the first work was deleted: exists %v", ok)
			}
		})
	}
}

// A manifest whose Complete condition is True is no longer applied: deleted on the spoke, it is not
// created again, while the rest of the work still is. Once every manifest with a Complete rule is
// Complete the work is, and nothing of it is applied any more, as with OCM's agent.
func TestCompletedManifestIsNotAppliedAgain(t *testing.T) {
	f := startAgent(t)
	doneWhenSet := []workv1.ConditionRule{{Condition: workv1.ManifestComplete, Type: workv1.CelConditionExpressionsType,
		CelExpressions: []string{`has(object.data.done) && object.data.done == "yes"`}}}
	w := f.work("complete", namespaceManifest, configMapA, configMapB)
	// Under Update the spoke's data.done survives the agent's writes: it is not in the manifest.
	w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{
		{ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: f.cluster, Name: "a"}, ConditionRules: doneWhenSet},
		{ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: f.cluster, Name: "b"}, ConditionRules: doneWhenSet},
	}
	f.create(w)
	f.waitWork(w.Name, "applied", allApplied)
	markDone := func(name string) {
		t.Helper()
		patch := []byte(`{"data":{"done":"yes"}}`)
		if _, err := f.kube.CoreV1().ConfigMaps(f.cluster).Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	markDone("a")
	f.waitWork(w.Name, "a Complete, the work not", func(w *workv1.ManifestWork) bool {
		return hasCondition(w, 1, workv1.ManifestComplete, metav1.ConditionTrue) && hasCondition(w, 2, workv1.ManifestComplete, metav1.ConditionFalse) &&
			workCondition(w, workv1.WorkComplete, metav1.ConditionFalse)
	})
	if err := f.kube.CoreV1().ConfigMaps(f.cluster).Delete(t.Context(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A change of the work is applied (b follows it) but a, Complete, is not created again.
	f.update(w.Name, func(w *workv1.ManifestWork) {
		w.Spec.Workload.Manifests[2] = f.work("", f.replace(configMapB, `k: "2"`, `k: "changed"`)).Spec.Workload.Manifests[0]
	})
	got := f.waitWork(w.Name, "b changed, a still Complete", func(w *workv1.ManifestWork) bool {
		return hasCondition(w, 2, workv1.ManifestApplied, metav1.ConditionTrue) && hasCondition(w, 1, workv1.ManifestApplied, metav1.ConditionTrue)
	})
	if cm, ok := spokeConfigMap(t, f, "b"); !ok || cm.Data["k"] != "changed" {
		t.Fatalf("configmap b after the work changed: %v", cm)
	}
	if f.configMapExists("a") {
		t.Fatal("configmap a, Complete, was created again after it was deleted on the spoke")
	}
	if c := manifestCondition(got, 1, workv1.ManifestComplete); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("configmap a's Complete after it was cleaned up: %+v, want it kept True", c)
	}

	// b completes too: the work is Complete, and from then on a change of it is not applied.
	markDone("b")
	f.waitWork(w.Name, "the work Complete", func(w *workv1.ManifestWork) bool { return workCondition(w, workv1.WorkComplete, metav1.ConditionTrue) })
	f.update(w.Name, func(w *workv1.ManifestWork) {
		w.Spec.Workload.Manifests[2] = f.work("", f.replace(configMapB, `k: "2"`, `k: "after-complete"`)).Spec.Workload.Manifests[0]
	})
	// A second work of the same agent, changed after the completed one, is applied: by then the
	// completed one's change has been looked at.
	control := f.create(f.work("complete-control", f.replace(configMapA, "name: a", "name: control")))
	f.waitWork(control.Name, "applied", allApplied)
	if cm, _ := spokeConfigMap(t, f, "b"); cm.Data["k"] != "changed" {
		t.Errorf("configmap b of the Complete work: data %v, want it left as it was", cm.Data)
	}
}

// Smaller parts of OCM's status and bookkeeping: every manifest has StatusFeedbackSynced (OCM's reason
// when it has no feedback rules), the AppliedManifestWork carries the work's labels, and a work whose
// objects are still being deleted says so with Deleting.
func TestStatusAndBookkeepingAsOCM(t *testing.T) {
	f := startAgent(t)
	w := f.work("ocm-status", namespaceManifest, configMapA)
	w.Labels = map[string]string{"app": "shop", "tier": "web"}
	f.create(w)
	got := f.waitWork(w.Name, "applied", allApplied)
	for ordinal := range int32(2) {
		c := manifestCondition(got, ordinal, agent.ConditionStatusFeedbackSynced)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "NoStatusFeedbackSynced" {
			t.Errorf("manifest %d: StatusFeedbackSynced %+v, want True/NoStatusFeedbackSynced", ordinal, c)
		}
	}
	amwName := agent.HubHash(testEnv(t).Hub.Config.Host) + "-" + w.Name
	amwLabels := func() map[string]string {
		amw, err := f.spokeWk.WorkV1().AppliedManifestWorks().Get(t.Context(), amwName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return amw.Labels
	}
	if l := amwLabels(); !maps.Equal(l, w.Labels) {
		t.Errorf("AppliedManifestWork labels %v, want the work's %v", l, w.Labels)
	}
	f.update(w.Name, func(w *workv1.ManifestWork) { w.Labels = map[string]string{"app": "shop", "release": "2"} })
	f.eventually("AppliedManifestWork labels follow the work's", func(context.Context) (bool, error) {
		return maps.Equal(amwLabels(), map[string]string{"app": "shop", "release": "2"}), nil
	})

	// A finalizer of someone else's holds configmap a, so the work stays being deleted.
	cm, _ := spokeConfigMap(t, f, "a")
	cm.Finalizers = append(cm.Finalizers, "example.com/hold")
	if _, err := f.kube.CoreV1().ConfigMaps(f.cluster).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.deleteWork(w.Name)
	f.waitWork(w.Name, "Deleting", func(w *workv1.ManifestWork) bool {
		c := findWorkCondition(w, workv1.WorkDeleting)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == "WorkDeleting"
	})
	f.eventually("configmap a released", func(ctx context.Context) (bool, error) {
		cm, ok := spokeConfigMap(t, f, "a")
		if !ok {
			return true, nil
		}
		cm.Finalizers = slices.DeleteFunc(cm.Finalizers, func(s string) bool { return s == "example.com/hold" })
		_, err := f.kube.CoreV1().ConfigMaps(f.cluster).Update(ctx, cm, metav1.UpdateOptions{})
		return err == nil, nil
	})
	f.waitWorkGone(w.Name)
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func configMap(namespace, name, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Data: map[string]string{"k": value}}
}

// The AppliedManifestWork OCM's work agent left (another agent ID, the klusterlet's; no cluster of
// Ferry's named on it) is adopted, with what it applied: the object keeps its UID and the record its
// UID, now under this agent's ID. One that names another cluster is refused, as before.
func TestAppliedManifestWorkOfOCMsAgentIsAdopted(t *testing.T) {
	f := startAgent(t)
	f.stop() // the cluster's agent is "OCM's" until the objects are in place
	if _, err := f.kube.CoreV1().Namespaces().Create(t.Context(), namespace(f.cluster), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	amwName := agent.HubHash(testEnv(t).Hub.Config.Host) + "-" + "from-ocm"
	amw, err := f.spokeWk.WorkV1().AppliedManifestWorks().Create(t.Context(), &workv1.AppliedManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: amwName, Finalizers: []string{workv1.AppliedManifestWorkFinalizer}},
		Spec: workv1.AppliedManifestWorkSpec{HubHash: agent.HubHash(testEnv(t).Hub.Config.Host), AgentID: "klusterlet-uid-0c3e",
			ManifestWorkName: "from-ocm"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm := configMap(f.cluster, "a", "1")
	cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: workv1.GroupVersion.String(), Kind: "AppliedManifestWork", Name: amw.Name, UID: amw.UID}}
	cm, err = f.kube.CoreV1().ConfigMaps(f.cluster).Create(t.Context(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	amw.Status.AppliedResources = []workv1.AppliedManifestResourceMeta{{Version: "v1", UID: string(cm.UID),
		ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: f.cluster, Name: "a"}}}
	if _, err := f.spokeWk.WorkV1().AppliedManifestWorks().UpdateStatus(t.Context(), amw, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	f.start()
	w := f.create(f.work("from-ocm", configMapA))
	f.waitWork(w.Name, "applied", allApplied)
	adopted, err := f.spokeWk.WorkV1().AppliedManifestWorks().Get(t.Context(), amwName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if adopted.UID != amw.UID || adopted.Spec.AgentID != f.cfg.AgentID {
		t.Errorf("AppliedManifestWork after the agent took over: uid %s (was %s), agentID %q; want the same record under %q", adopted.UID, amw.UID, adopted.Spec.AgentID, f.cfg.AgentID)
	}
	if now, ok := spokeConfigMap(t, f, "a"); !ok || now.UID != cm.UID {
		t.Fatalf("configmap a after the agent took over: exists %v; want the same object (uid %s)", ok, cm.UID)
	}

	// A record another cluster's agent made (Ferry names the cluster on it) is not taken.
	other := agent.HubHash(testEnv(t).Hub.Config.Host) + "-" + "other-cluster-work"
	if _, err := f.spokeWk.WorkV1().AppliedManifestWorks().Create(t.Context(), &workv1.AppliedManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: other, Annotations: map[string]string{"ferry.io/cluster": "someone-else"}},
		Spec: workv1.AppliedManifestWorkSpec{HubHash: agent.HubHash(testEnv(t).Hub.Config.Host), AgentID: "someone-else-agent",
			ManifestWorkName: "other-cluster-work"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.create(f.work("other-cluster-work", configMapB))
	refused := f.waitWork("other-cluster-work", "refused, saying why", func(w *workv1.ManifestWork) bool {
		return workCondition(w, workv1.WorkApplied, metav1.ConditionFalse)
	})
	if c := findWorkCondition(refused, workv1.WorkApplied); c.Reason != agent.ReasonAppliedWorkOfAnotherCluster || !strings.Contains(c.Message, "someone-else") {
		t.Errorf("Applied of the refused work: %s %q; want %s naming the other cluster", c.Reason, c.Message, agent.ReasonAppliedWorkOfAnotherCluster)
	}
	if f.configMapExists("b") {
		t.Error("the refused work applied configmap b")
	}
	kept, err := f.spokeWk.WorkV1().AppliedManifestWorks().Get(t.Context(), other, metav1.GetOptions{})
	if err != nil || kept.Spec.AgentID != "someone-else-agent" {
		t.Errorf("another cluster's AppliedManifestWork: %v, agentID %q; want it left alone", err, kept.Spec.AgentID)
	}
}
