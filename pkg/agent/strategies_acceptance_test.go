package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
)

// The acceptance points of apply-once, the 3-way merge of Update, CreateOnly and ServerSideApply through the agent: every change is made to a
// ManifestWork on the hub, every result is read from the spoke and from the work's status.

const (
	// mergeDeployment sets minReadySeconds and leaves replicas to the API server's default.
	mergeDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: "{{ns}}"}
spec:
  minReadySeconds: 60
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.25"}]
`
	// onceDeployment is an OAM-rendered workload: its generation annotation says which rendering it is.
	onceDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: "{{ns}}"
  annotations: {app.oam.dev/generation: "1"}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.25"}]
`
	ssaDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: "{{ns}}"}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.25"}]
`
	serviceWeb = `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: "{{ns}}"}
spec:
  selector: {app: web}
  ports: [{port: 80, protocol: TCP}]
`
	jobWithoutSelector = `
apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: "{{ns}}"}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, command: ["true"]}]
`
)

var deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// manifest builds one manifest of the test's namespace, as f.work does.
func (f *agentFixture) manifest(yaml string) workv1.Manifest {
	f.t.Helper()
	return f.work("x", yaml).Spec.Workload.Manifests[0]
}

// setManifest replaces manifest i of the work.
func (f *agentFixture) setManifest(work string, i int, yaml string) {
	f.t.Helper()
	m := f.manifest(yaml)
	f.update(work, func(w *workv1.ManifestWork) { w.Spec.Workload.Manifests[i] = m })
}

// replace returns s with old replaced by with, failing the test when s does not contain old (a manifest
// "change" that changes nothing would make the test pass vacuously).
func (f *agentFixture) replace(s, old, with string) string {
	f.t.Helper()
	if !strings.Contains(s, old) {
		f.t.Fatalf("manifest does not contain %q", old)
	}
	return strings.Replace(s, old, with, 1)
}

func (f *agentFixture) liveObject(gvr schema.GroupVersionResource, name string) *unstructured.Unstructured {
	f.t.Helper()
	u, err := f.dynamic.Resource(gvr).Namespace(f.cluster).Get(f.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("%s %s on the spoke: %v", gvr.Resource, name, err)
	}
	return u
}

func (f *agentFixture) liveDeployment(name string) *appsv1.Deployment {
	f.t.Helper()
	d, err := f.kube.AppsV1().Deployments(f.cluster).Get(f.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("deployment %s on the spoke: %v", name, err)
	}
	return d
}

func (f *agentFixture) liveConfigMap(name string) *corev1.ConfigMap {
	f.t.Helper()
	cm, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(f.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("configmap %s on the spoke: %v", name, err)
	}
	return cm
}

func containerImage(d *appsv1.Deployment) string {
	if len(d.Spec.Template.Spec.Containers) == 0 {
		return ""
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

// createOnSpoke creates the test's namespace and the given ConfigMaps on the spoke as another client.
func (f *agentFixture) createOnSpoke(cms ...*corev1.ConfigMap) {
	f.t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.cluster}}
	if _, err := f.kube.CoreV1().Namespaces().Create(f.t.Context(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		f.t.Fatal(err)
	}
	for _, cm := range cms {
		if _, err := f.kube.CoreV1().ConfigMaps(f.cluster).Create(f.t.Context(), cm, metav1.CreateOptions{FieldManager: "someone-else"}); err != nil {
			f.t.Fatal(err)
		}
	}
}

// The three-way merge: a field the previous manifest set and the new one omits is removed from the object.
func TestUpdateRemovesAFieldTheManifestNoLongerSets(t *testing.T) {
	f := startAgent(t)
	w := f.create(f.work("omit", namespaceManifest, mergeDeployment))
	f.waitWork(w.Name, "applied", allApplied)
	if got, found, _ := unstructured.NestedInt64(f.liveObject(deploymentsGVR, "web").Object, "spec", "minReadySeconds"); !found || got != 60 {
		t.Fatalf("minReadySeconds after the first apply = %d (set: %v), want 60", got, found)
	}

	f.setManifest(w.Name, 1, f.replace(mergeDeployment, "  minReadySeconds: 60\n", ""))
	f.waitWork(w.Name, "applied without minReadySeconds", allApplied)
	f.eventually("minReadySeconds removed", func(ctx context.Context) (bool, error) {
		u, err := f.dynamic.Resource(deploymentsGVR).Namespace(f.cluster).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "minReadySeconds")
		return !found, nil
	})
}

// The three-way merge: a label and spec.replicas set by another client, neither in the manifest, survive the
// next apply of a changed manifest under Update.
func TestUpdateKeepsFieldsAnotherClientSet(t *testing.T) {
	f := startAgent(t)
	w := f.create(f.work("others", namespaceManifest, mergeDeployment))
	f.waitWork(w.Name, "applied", allApplied)

	patch := `{"metadata":{"labels":{"team":"payments"}},"spec":{"replicas":3}}`
	if _, err := f.kube.AppsV1().Deployments(f.cluster).Patch(t.Context(), "web", types.StrategicMergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	// A new apply: the manifest changes its image.
	f.setManifest(w.Name, 1, f.replace(mergeDeployment, "nginx:1.25", "nginx:1.26"))
	f.waitWork(w.Name, "applied with the new image", allApplied)
	f.eventually("new image on the spoke", func(ctx context.Context) (bool, error) {
		d, err := f.kube.AppsV1().Deployments(f.cluster).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && containerImage(d) == "nginx:1.26", err
	})
	d := f.liveDeployment("web")
	if got := d.Labels["team"]; got != "payments" {
		t.Errorf("label team set by another client = %q, want payments kept", got)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
		t.Errorf("replicas set by another client = %v, want 3 kept", d.Spec.Replicas)
	}
	if d.Spec.MinReadySeconds != 60 {
		t.Errorf("minReadySeconds (the manifest's) = %d, want 60", d.Spec.MinReadySeconds)
	}
}

// The three-way merge: a Service's allocated clusterIP (not in the manifest, immutable) never causes an error or
// a write: resyncs write nothing, and a changed manifest applies and keeps the address.
func TestUpdateLeavesAServicesAllocatedClusterIPAlone(t *testing.T) {
	f := startAgent(t, withResync(100*time.Millisecond))
	w := f.create(f.work("svc", namespaceManifest, serviceWeb))
	f.waitWork(w.Name, "applied", allApplied)
	svc, err := f.kube.CoreV1().Services(f.cluster).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip := svc.Spec.ClusterIP
	if ip == "" || ip == corev1.ClusterIPNone {
		t.Fatalf("no clusterIP allocated: %q", ip)
	}

	if hub, spoke := f.writesOfQuietResyncs(2); hub != 0 || spoke != 0 {
		t.Errorf("resyncs of an applied Service wrote %d times to the hub and %d times to the spoke, want 0", hub, spoke)
	}
	got := f.waitWork(w.Name, "still applied", allApplied)
	if c := manifestCondition(got, 1, workv1.ManifestApplied); c.Reason != workv1.AppliedManifestComplete {
		t.Errorf("Service Applied = %s %q, want %s", c.Reason, c.Message, workv1.AppliedManifestComplete)
	}

	f.setManifest(w.Name, 1, f.replace(serviceWeb, "port: 80", "port: 8080"))
	f.waitWork(w.Name, "applied with the new port", allApplied)
	f.eventually("new port on the spoke", func(ctx context.Context) (bool, error) {
		s, err := f.kube.CoreV1().Services(f.cluster).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && len(s.Spec.Ports) == 1 && s.Spec.Ports[0].Port == 8080, err
	})
	if svc, err := f.kube.CoreV1().Services(f.cluster).Get(t.Context(), "web", metav1.GetOptions{}); err != nil || svc.Spec.ClusterIP != ip {
		t.Errorf("clusterIP after the new port = %q (%v), want %q kept", svc.Spec.ClusterIP, err, ip)
	}
}

// Update strategies: a Job without spec.selector (the API server defaults an immutable one) applies and
// re-syncs under Update without an error and without writes; once it is Complete it is no longer applied.
func TestUpdateResyncsAJobWithoutSelectorWithoutErrorOrWrites(t *testing.T) {
	f := startAgent(t, withResync(100*time.Millisecond))
	w := f.create(f.work("job", namespaceManifest, jobWithoutSelector))
	f.waitWork(w.Name, "applied", allApplied)
	job, err := f.kube.BatchV1().Jobs(f.cluster).Get(t.Context(), "once", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if job.Spec.Selector == nil {
		t.Fatal("the API server did not default spec.selector")
	}
	// The spoke's nodes run the Job to completion, and its health changes on the way: the resyncs to
	// measure are those of a settled Job.
	f.waitWork(w.Name, "the Job complete", func(w *workv1.ManifestWork) bool {
		return hasCondition(w, 1, workv1.ManifestComplete, metav1.ConditionTrue)
	})

	if hub, spoke := f.writesOfQuietResyncs(2); hub != 0 || spoke != 0 {
		t.Errorf("resyncs of an applied Job wrote %d times to the hub and %d times to the spoke, want 0", hub, spoke)
	}
	got := f.waitWork(w.Name, "still applied", allApplied)
	if c := manifestCondition(got, 1, workv1.ManifestApplied); c.Reason != workv1.AppliedManifestComplete {
		t.Errorf("Job Applied = %s %q, want %s", c.Reason, c.Message, workv1.AppliedManifestComplete)
	}

	// A Complete Job is no longer applied, as with OCM's agent: a change of its manifest is reported,
	// not written (see TestCompletedManifestIsNotAppliedAgain).
	f.setManifest(w.Name, 1, f.replace(jobWithoutSelector, `namespace: "{{ns}}"}`, `namespace: "{{ns}}", labels: {tier: batch}}`))
	got = f.waitWork(w.Name, "looked at again", allApplied)
	if c := manifestCondition(got, 1, workv1.ManifestApplied); !strings.Contains(c.Message, "Complete") {
		t.Errorf("Job Applied = %s %q, want it to say the Job is Complete", c.Reason, c.Message)
	}
	if j, err := f.kube.BatchV1().Jobs(f.cluster).Get(t.Context(), "once", metav1.GetOptions{}); err != nil || j.Labels["tier"] != "" {
		t.Errorf("the Complete Job was written: labels %v (%v)", j.Labels, err)
	}
}

// CreateOnly: an object that exists — created by another client, or by this work — is never updated,
// even when the manifest changes; the work reports it Applied.
func TestCreateOnlyNeverUpdatesAnExistingObject(t *testing.T) {
	f := startAgent(t, withResync(100*time.Millisecond))
	f.createOnSpoke(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pre", Namespace: f.cluster}, Data: map[string]string{"k": "spoke"}})
	pre := f.liveConfigMap("pre")

	cmPre := `{apiVersion: v1, kind: ConfigMap, metadata: {name: pre, namespace: "{{ns}}"}, data: {k: "hub"}}`
	w := f.work("create-only", configMapA, cmPre)
	w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{
		strategy("configmaps", f.cluster, "a", workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeCreateOnly}),
		strategy("configmaps", f.cluster, "pre", workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeCreateOnly}),
	}
	f.create(w)
	f.waitWork(w.Name, "applied", allApplied)
	a := f.liveConfigMap("a")
	if a.Data["k"] != "1" {
		t.Fatalf("configmap a created with k=%q, want the manifest's 1", a.Data["k"])
	}
	if got := f.liveConfigMap("pre"); got.ResourceVersion != pre.ResourceVersion || got.Data["k"] != "spoke" {
		t.Errorf("existing configmap pre: resourceVersion %s → %s, k=%q; want untouched with k=spoke",
			pre.ResourceVersion, got.ResourceVersion, got.Data["k"])
	}

	newA, newPre := f.manifest(f.replace(configMapA, `k: "1"`, `k: "2"`)), f.manifest(f.replace(cmPre, `k: "hub"`, `k: "hub2"`))
	f.update(w.Name, func(w *workv1.ManifestWork) {
		w.Spec.Workload.Manifests[0], w.Spec.Workload.Manifests[1] = newA, newPre
	})
	got := f.waitWork(w.Name, "changed manifests applied", allApplied)
	for i := range got.Spec.Workload.Manifests {
		if c := manifestCondition(got, int32(i), workv1.ManifestApplied); c.Reason != workv1.AppliedManifestComplete {
			t.Errorf("manifest %d Applied reason = %s %q, want %s", i, c.Reason, c.Message, workv1.AppliedManifestComplete)
		}
	}
	f.waitResyncs(3, 2)
	for _, want := range []*corev1.ConfigMap{a, pre} {
		got := f.liveConfigMap(want.Name)
		if got.ResourceVersion != want.ResourceVersion || got.Data["k"] != want.Data["k"] {
			t.Errorf("configmap %s after the manifest changed: resourceVersion %s → %s, k=%q → %q; want it never updated",
				want.Name, want.ResourceVersion, got.ResourceVersion, want.Data["k"], got.Data["k"])
		}
	}
}

// CreateOnly over an object another client created: the work never wrote it, so deleting the work
// (Foreground, the default) must leave it, as the OCM agent does (it deletes only objects owned by the
// AppliedManifestWork); the object the work created is deleted.
func TestCreateOnlyLeavesAnObjectItDidNotCreateWhenTheWorkIsDeleted(t *testing.T) {
	f := startAgent(t)
	f.createOnSpoke(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: f.cluster}, Data: map[string]string{"k": "spoke"}})
	w := f.work("create-only-theirs", `{apiVersion: v1, kind: ConfigMap, metadata: {name: theirs, namespace: "{{ns}}"}, data: {k: "hub"}}`, configMapA)
	w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{
		strategy("configmaps", f.cluster, "theirs", workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeCreateOnly}),
	}
	f.create(w)
	f.waitWork(w.Name, "applied", allApplied)
	f.deleteWork(w.Name)
	f.waitWorkGone(w.Name)
	if f.configMapExists("a") {
		t.Error("configmap a, created by the work, survived")
	}
	if !f.configMapExists("theirs") {
		t.Error("configmap theirs, created by another client and never written by the work, was deleted with the work")
	}
}

// ReadOnly: the object another client created is never written, yet it is Available and its
// JSONPaths feedback (read from the spoke's object, not the manifest) reaches the hub and follows it.
func TestReadOnlyWritesNothingAndReportsAvailabilityAndFeedback(t *testing.T) {
	f := startAgent(t, withResync(100*time.Millisecond))
	f.createOnSpoke(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ro", Namespace: f.cluster}, Data: map[string]string{"k": "spoke"}})

	w := f.work("read-only", `{apiVersion: v1, kind: ConfigMap, metadata: {name: ro, namespace: "{{ns}}", labels: {from: hub}}, data: {k: "hub"}}`)
	w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{
		ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: f.cluster, Name: "ro"},
		UpdateStrategy:     &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly},
		FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{
			{Name: "k", Path: ".data.k"},
		}}},
	}}
	f.create(w)
	f.waitWork(w.Name, "available with feedback", func(w *workv1.ManifestWork) bool {
		return allApplied(w) && feedbackValue(w, 0, "k") == "spoke" &&
			hasCondition(w, 0, "StatusFeedbackSynced", metav1.ConditionTrue)
	})
	before := f.liveConfigMap("ro")

	// The spoke's object changes: the feedback follows, the object is still not written.
	before.Data["k"] = "spoke2"
	changed, err := f.kube.CoreV1().ConfigMaps(f.cluster).Update(t.Context(), before, metav1.UpdateOptions{FieldManager: "someone-else"})
	if err != nil {
		t.Fatal(err)
	}
	f.waitWork(w.Name, "feedback follows the spoke", func(w *workv1.ManifestWork) bool {
		return allApplied(w) && feedbackValue(w, 0, "k") == "spoke2"
	})
	f.waitResyncs(3, 1)
	got := f.liveConfigMap("ro")
	if got.ResourceVersion != changed.ResourceVersion {
		t.Errorf("ReadOnly object written: resourceVersion %s → %s", changed.ResourceVersion, got.ResourceVersion)
	}
	if got.Data["k"] != "spoke2" || got.Labels["from"] != "" || len(got.OwnerReferences) != 0 {
		t.Errorf("ReadOnly object changed: data %v, labels %v, owners %v", got.Data, got.Labels, got.OwnerReferences)
	}
	for _, mf := range got.ManagedFields {
		if mf.Manager == "work-agent" {
			t.Errorf("ReadOnly object has fields managed by work-agent: %+v", mf)
		}
	}
}

// ReadOnly: a manifest whose object does not exist is not Available, and is not created.
func TestReadOnlyMissingObjectIsNotAvailable(t *testing.T) {
	f := startAgent(t)
	f.createOnSpoke()
	w := f.work("read-only-missing", `{apiVersion: v1, kind: ConfigMap, metadata: {name: absent, namespace: "{{ns}}"}, data: {k: "hub"}}`)
	w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{
		strategy("configmaps", f.cluster, "absent", workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly}),
	}
	f.create(w)
	got := f.waitWork(w.Name, "not available", func(w *workv1.ManifestWork) bool {
		return hasCondition(w, 0, workv1.ManifestAvailable, metav1.ConditionFalse)
	})
	if !workCondition(got, workv1.WorkAvailable, metav1.ConditionFalse) {
		t.Errorf("work-level Available is not False: %+v", got.Status.Conditions)
	}
	if f.configMapExists("absent") {
		t.Error("ReadOnly created the missing object")
	}
}

// Apply-once-only "on" (ApplyOnce): a change of the image made on the spoke is kept across resyncs; a new
// app.oam.dev/generation in the manifest re-applies it and overwrites the change; a deleted object is
// re-created.
func TestApplyOnceKeepsSpokeChangesUntilTheManifestChanges(t *testing.T) {
	f := startAgent(t, withResync(100*time.Millisecond))
	w := f.work("once", namespaceManifest, onceDeployment)
	w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{
		strategy("deployments", f.cluster, "web", workv1.UpdateStrategy{Type: "ApplyOnce"}),
	}
	f.create(w)
	f.waitWork(w.Name, "applied", allApplied)
	if got := containerImage(f.liveDeployment("web")); got != "nginx:1.25" {
		t.Fatalf("image after the first apply = %s, want nginx:1.25", got)
	}

	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:spoke"}]}}}}`
	if _, err := f.kube.AppsV1().Deployments(f.cluster).Patch(t.Context(), "web", types.StrategicMergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	f.waitResyncs(5, 2)
	if got := containerImage(f.liveDeployment("web")); got != "nginx:spoke" {
		t.Fatalf("image after resyncs = %s, want the spoke's nginx:spoke kept", got)
	}
	f.waitWork(w.Name, "still applied", allApplied)

	f.setManifest(w.Name, 1, f.replace(onceDeployment, `generation: "1"`, `generation: "2"`))
	f.waitWork(w.Name, "generation 2 applied", allApplied)
	f.eventually("image overwritten by generation 2", func(ctx context.Context) (bool, error) {
		d, err := f.kube.AppsV1().Deployments(f.cluster).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && containerImage(d) == "nginx:1.25" && d.Annotations["app.oam.dev/generation"] == "2", err
	})

	old := f.liveDeployment("web")
	if err := f.kube.AppsV1().Deployments(f.cluster).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("re-created", func(ctx context.Context) (bool, error) {
		d, err := f.kube.AppsV1().Deployments(f.cluster).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.UID != old.UID && containerImage(d) == "nginx:1.25", ignoreNotFound(err)
	})
	f.waitWork(w.Name, "applied after re-creation", allApplied)
}

// Update strategies + OCM: under ServerSideApply with ignoreFields OnSpokePresent on .spec.replicas, another
// client scaling the Deployment is kept across resyncs (which write nothing) and across a change of
// the manifest, which still applies its other fields.
func TestServerSideApplyIgnoreFieldsOnSpokePresentKeepsAnotherClientsScale(t *testing.T) {
	f := startAgent(t, withResync(100*time.Millisecond))
	w := f.work("ssa-ignore", namespaceManifest, ssaDeployment)
	w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{
		strategy("deployments", f.cluster, "web", workv1.UpdateStrategy{
			Type: workv1.UpdateStrategyTypeServerSideApply,
			ServerSideApply: &workv1.ServerSideApplyConfig{
				FieldManager: "work-agent",
				IgnoreFields: []workv1.IgnoreField{{
					Condition: workv1.IgnoreFieldsConditionOnSpokePresent,
					JSONPaths: []string{".spec.replicas"},
				}},
			},
		}),
	}
	f.create(w)
	f.waitWork(w.Name, "applied", allApplied)
	if d := f.liveDeployment("web"); d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Fatalf("replicas at creation = %v, want the manifest's 2", d.Spec.Replicas)
	}

	if _, err := f.kube.AppsV1().Deployments(f.cluster).Patch(t.Context(), "web", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`),
		metav1.PatchOptions{FieldManager: "hpa-controller"}); err != nil {
		t.Fatal(err)
	}
	// The scale settles first: while its pods start, the Deployment's status changes, and the agent
	// reports that change (a hub write that is the work's health, not a resync's).
	f.eventually("the scale to 5 rolled out", func(ctx context.Context) (bool, error) {
		d, err := f.kube.AppsV1().Deployments(f.cluster).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedReplicas == 5 && d.Status.AvailableReplicas == 5, err
	})
	if hub, spoke := f.writesOfQuietResyncs(2); hub != 0 || spoke != 0 {
		t.Errorf("resyncs after the scale wrote %d times to the hub and %d times to the spoke, want 0", hub, spoke)
	}
	if d := f.liveDeployment("web"); *d.Spec.Replicas != 5 {
		t.Fatalf("replicas after resyncs = %d, want the other client's 5 kept", *d.Spec.Replicas)
	}
	got := f.waitWork(w.Name, "still applied", allApplied)
	if c := manifestCondition(got, 1, workv1.ManifestApplied); c.Reason != workv1.AppliedManifestComplete {
		t.Errorf("Applied = %s %q, want %s", c.Reason, c.Message, workv1.AppliedManifestComplete)
	}

	// A new manifest, with a new image and other replicas: the image applies, the replicas stay.
	changed := f.replace(f.replace(ssaDeployment, "nginx:1.25", "nginx:1.26"), "replicas: 2", "replicas: 3")
	f.setManifest(w.Name, 1, changed)
	f.waitWork(w.Name, "new manifest applied", allApplied)
	f.eventually("new image on the spoke", func(ctx context.Context) (bool, error) {
		d, err := f.kube.AppsV1().Deployments(f.cluster).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && containerImage(d) == "nginx:1.26", err
	})
	if d := f.liveDeployment("web"); *d.Spec.Replicas != 5 {
		t.Errorf("replicas after a new manifest = %d, want the other client's 5 kept", *d.Spec.Replicas)
	}
}
