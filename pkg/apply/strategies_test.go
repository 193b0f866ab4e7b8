package apply_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ferry-mc/ferry/pkg/apply"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

var deployments = appsv1.SchemeGroupVersion.WithResource("deployments")

func image(t *testing.T, f *fixture) string {
	t.Helper()
	live := f.get(apply.Result{Resource: deployments, Namespaced: true}, "web")
	containers := nested(t, live, "spec", "template", "spec", "containers").([]any)
	return containers[0].(map[string]any)["image"].(string)
}

func setImage(f *fixture, img string) {
	f.t.Helper()
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"` + img + `"}]}}}}`
	if _, err := f.kube.AppsV1().Deployments(f.ns).Patch(f.t.Context(), "web", types.StrategicMergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		f.t.Fatal(err)
	}
}

func deleteDeployment(f *fixture) {
	f.t.Helper()
	if err := f.kube.AppsV1().Deployments(f.ns).Delete(f.t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func TestCreateOnlyNeverUpdatesAnExistingObject(t *testing.T) {
	f := newFixture(t)
	d := f.manifest(deployment)
	if res := f.apply(d, apply.Options{Strategy: apply.CreateOnly}); res.Operation != apply.Created {
		t.Fatalf("first apply: %s, want Created", res.Operation)
	}
	setImage(f, "nginx:spoke")
	d.Object["spec"].(map[string]any)["replicas"] = int64(5)
	if res := f.noWrites(d, apply.Options{Strategy: apply.CreateOnly}); res.Operation != apply.Unchanged {
		t.Errorf("apply of a changed manifest: %s, want Unchanged", res.Operation)
	}
	if got := image(t, f); got != "nginx:spoke" {
		t.Errorf("image = %s, want the spoke's nginx:spoke", got)
	}
	if got := nested(t, f.get(apply.Result{Resource: deployments, Namespaced: true}, "web"), "spec", "replicas"); got != int64(2) {
		t.Errorf("replicas = %v, want 2 from creation", got)
	}
}

func TestReadOnlyNeverWrites(t *testing.T) {
	f := newFixture(t)
	d := f.manifest(deployment)
	res := f.noWrites(d, apply.Options{Strategy: apply.ReadOnly})
	if res.Object != nil || res.Operation != apply.Skipped {
		t.Errorf("missing object: operation %s, object %v; want Skipped and none", res.Operation, res.Object)
	}
	f.apply(d, apply.Options{}) // someone creates it
	setImage(f, "nginx:spoke")
	res = f.noWrites(d, apply.Options{Strategy: apply.ReadOnly})
	if res.Object == nil || res.Operation != apply.Unchanged {
		t.Fatalf("existing object: operation %s, object %v; want Unchanged and the object", res.Operation, res.Object)
	}
	if got := image(t, f); got != "nginx:spoke" {
		t.Errorf("image = %s, want nginx:spoke untouched", got)
	}
}

// ReadOnly asked for a report (report-only delivery) says, from its one read, what applying the manifest
// would change, and writes nothing: a missing object would be created; one the manifest was applied to
// matches it, the API server's defaults notwithstanding; a change made on the cluster shows with both
// values.
func TestReadOnlyReportsWhatApplyingWouldChange(t *testing.T) {
	f := newFixture(t)
	d := f.manifest(deployment)
	report := apply.Options{Strategy: apply.ReadOnly, ReportDiff: true}
	if res := f.noWrites(d, report); res.Diff == nil || !res.Diff.Create {
		t.Errorf("missing object: diff %+v, want Create", res.Diff)
	}
	f.apply(d, apply.Options{})
	if res := f.noWrites(d, report); res.Diff == nil || res.Diff.Changes() {
		t.Errorf("object as applied: diff %+v, want no change", res.Diff)
	}
	setImage(f, "nginx:spoke")
	res := f.noWrites(d, report)
	want := []workreport.FieldChange{{Path: ".spec.template.spec.containers[0].image", Live: `"nginx:spoke"`, Want: `"nginx:1.25"`}}
	if res.Diff == nil || !slices.Equal(res.Diff.Fields, want) || res.Diff.MoreFields != 0 {
		t.Errorf("object changed on the cluster: diff %+v, want %+v", res.Diff, want)
	}
	if got := image(t, f); got != "nginx:spoke" {
		t.Errorf("image = %s, want nginx:spoke untouched", got)
	}
	if res := f.noWrites(d, apply.Options{Strategy: apply.ReadOnly}); res.Diff != nil {
		t.Errorf("ReadOnly not asked for a report made one: %+v", res.Diff)
	}
}

// Apply-once-only "on": a change made on the cluster is kept until the manifest changes; a deleted object is
// re-created.
func TestApplyOnceKeepsClusterChangesUntilTheManifestChanges(t *testing.T) {
	f := newFixture(t)
	opts := apply.Options{Strategy: apply.ApplyOnce}
	d := f.manifest(deployment)
	d.SetAnnotations(map[string]string{"app.oam.dev/generation": "1"})
	f.apply(d, opts)

	setImage(f, "nginx:spoke")
	for range 2 {
		if res := f.noWrites(d, opts); res.Operation != apply.Skipped {
			t.Errorf("resync: %s, want Skipped", res.Operation)
		}
	}
	if got := image(t, f); got != "nginx:spoke" {
		t.Fatalf("image after resync = %s, want the spoke's nginx:spoke", got)
	}

	d.SetAnnotations(map[string]string{"app.oam.dev/generation": "2"})
	if res := f.apply(d, opts); res.Operation != apply.Updated {
		t.Fatalf("apply of generation 2: %s, want Updated", res.Operation)
	}
	if got := image(t, f); got != "nginx:1.25" {
		t.Errorf("image after the manifest changed = %s, want nginx:1.25", got)
	}

	deleteDeployment(f)
	if res := f.apply(d, opts); res.Operation != apply.Created {
		t.Errorf("apply after deletion on the cluster: %s, want Created", res.Operation)
	}
}

// Apply-once-only "force": a deleted object stays deleted until the manifest changes.
func TestApplyOnceForceDoesNotRecreateADeletedObject(t *testing.T) {
	f := newFixture(t)
	d := f.manifest(deployment)
	d.SetAnnotations(map[string]string{"app.oam.dev/generation": "1"})
	res := f.apply(d, apply.Options{Strategy: apply.ApplyOnceForce})
	if res.Operation != apply.Created {
		t.Fatalf("first apply: %s, want Created", res.Operation)
	}
	applied := res.Hash // what the caller records

	deleteDeployment(f)
	res = f.noWrites(d, apply.Options{Strategy: apply.ApplyOnceForce, AppliedHash: applied})
	if res.Operation != apply.Skipped || res.Object != nil || !strings.Contains(res.Message, "deleted") {
		t.Fatalf("apply after deletion: %s %q, want Skipped saying it was deleted", res.Operation, res.Message)
	}
	if _, err := f.kube.AppsV1().Deployments(f.ns).Get(t.Context(), "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("deployment re-created: %v", err)
	}

	d.SetAnnotations(map[string]string{"app.oam.dev/generation": "2"})
	if res := f.apply(d, apply.Options{Strategy: apply.ApplyOnceForce, AppliedHash: applied}); res.Operation != apply.Created {
		t.Errorf("apply of a changed manifest: %s, want Created", res.Operation)
	}
}

// Update strategies: another manager owning spec.replicas makes server-side apply fail with a conflict naming
// the field and the manager; force takes it; dropping the field from the manifest resolves it.
func TestServerSideApplyReportsConflictsByFieldAndManager(t *testing.T) {
	f := newFixture(t)
	d := f.manifest(deployment)
	f.apply(d, apply.Options{Strategy: apply.ServerSideApply})

	// An HPA-like controller takes spec.replicas with its own apply.
	hpa := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":4}}`
	force := true
	if _, err := f.kube.AppsV1().Deployments(f.ns).Patch(t.Context(), "web", types.ApplyPatchType, []byte(hpa),
		metav1.PatchOptions{FieldManager: "hpa-controller", Force: &force}); err != nil {
		t.Fatal(err)
	}

	d.Object["spec"].(map[string]any)["replicas"] = int64(3) // the manifest changes, and still sets replicas
	_, err := f.applier.Apply(t.Context(), d, apply.Options{Strategy: apply.ServerSideApply})
	if !apply.IsConflict(err) {
		t.Fatalf("apply over another manager's field: %v, want a conflict", err)
	}
	for _, want := range []string{".spec.replicas", `"hpa-controller"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("conflict message %q does not name %s", err, want)
		}
	}

	res := f.apply(d, apply.Options{Strategy: apply.ServerSideApply, Force: true})
	if got := nested(t, res.Object, "spec", "replicas"); got != int64(3) {
		t.Errorf("replicas after a forced apply = %v, want 3", got)
	}
	f.noWrites(d, apply.Options{Strategy: apply.ServerSideApply})

	// Give replicas back to the controller, and leave them out of the manifest.
	if _, err := f.kube.AppsV1().Deployments(f.ns).Patch(t.Context(), "web", types.ApplyPatchType, []byte(hpa),
		metav1.PatchOptions{FieldManager: "hpa-controller", Force: &force}); err != nil {
		t.Fatal(err)
	}
	delete(d.Object["spec"].(map[string]any), "replicas")
	res = f.apply(d, apply.Options{Strategy: apply.ServerSideApply})
	if got := nested(t, res.Object, "spec", "replicas"); got != int64(4) {
		t.Errorf("replicas = %v, want the controller's 4", got)
	}
	f.noWrites(d, apply.Options{Strategy: apply.ServerSideApply})
}

func TestOwnerIsAddedAndKept(t *testing.T) {
	for _, strategy := range []apply.StrategyType{apply.Update, apply.ServerSideApply} {
		t.Run(string(strategy), func(t *testing.T) {
			f := newFixture(t)
			cm, err := f.kube.CoreV1().ConfigMaps(f.ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			owner := &metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID}
			other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "0000-other"}
			d := f.manifest(deployment)
			f.apply(d, apply.Options{Strategy: strategy})
			// Another work's owner is on the object already.
			patch := `{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"other","uid":"0000-other"}]}}`
			if _, err := f.kube.AppsV1().Deployments(f.ns).Patch(t.Context(), "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			res := f.apply(d, apply.Options{Strategy: strategy, Owner: owner})
			refs := res.Object.GetOwnerReferences()
			if len(refs) != 2 || refs[0].UID != other.UID || refs[1].UID != owner.UID {
				t.Errorf("owner references = %v, want the other work's and ours", refs)
			}
			f.noWrites(d, apply.Options{Strategy: strategy, Owner: owner})
		})
	}
}
