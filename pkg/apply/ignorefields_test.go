package apply_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ferry-mc/ferry/pkg/apply"
)

const ignoreFieldsDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: "{{ns}}"
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: app:1
      - name: sidecar
        image: proxy:1
`

func ssaIgnoring(force bool, fields ...apply.IgnoreField) apply.Options {
	return apply.Options{Strategy: apply.ServerSideApply, Force: force, IgnoreFields: fields}
}

func liveDeployment(f *fixture) *appsv1.Deployment {
	f.t.Helper()
	d, err := f.kube.AppsV1().Deployments(f.ns).Get(f.t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

func liveReplicas(f *fixture) int32 {
	f.t.Helper()
	return *liveDeployment(f).Spec.Replicas
}

func liveImage(f *fixture, container string) string {
	f.t.Helper()
	for _, c := range liveDeployment(f).Spec.Template.Spec.Containers {
		if c.Name == container {
			return c.Image
		}
	}
	f.t.Fatalf("no container %q", container)
	return ""
}

// patchAs changes the Deployment as another client on the spoke: a plain Update under its own field
// manager, which takes the fields it changes away from Ferry's.
func patchAs(f *fixture, manager string, pt types.PatchType, patch string) {
	f.t.Helper()
	if _, err := f.kube.AppsV1().Deployments(f.ns).Patch(f.t.Context(), "web", pt, []byte(patch),
		metav1.PatchOptions{FieldManager: manager}); err != nil {
		f.t.Fatal(err)
	}
}

func scaleAsHPA(f *fixture, replicas string) {
	f.t.Helper()
	patchAs(f, "hpa-controller", types.MergePatchType, `{"spec":{"replicas":`+replicas+`}}`)
}

func setManifestImage(d *unstructured.Unstructured, container, img string) {
	for _, c := range d.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any) {
		if c := c.(map[string]any); c["name"] == container {
			c["image"] = img
		}
	}
}

func TestIgnoreFieldOnSpokePresentKeepsAnotherClientsReplicasWithoutWriting(t *testing.T) {
	f := newFixture(t)
	opts := ssaIgnoring(false, apply.IgnoreField{Condition: apply.OnSpokePresent, JSONPaths: []string{".spec.replicas"}})
	d := f.manifest(ignoreFieldsDeployment)
	if res := f.apply(d, opts); res.Operation != apply.Created {
		t.Fatalf("first apply: %s, want Created", res.Operation)
	}
	if got := liveReplicas(f); got != 2 {
		t.Fatalf("replicas after creation = %d, want the manifest's 2", got)
	}
	f.noWrites(d, opts)

	scaleAsHPA(f, "5")
	if res := f.noWrites(d, opts); res.Operation != apply.Unchanged {
		t.Errorf("re-apply after the spoke scaled: %s, want Unchanged", res.Operation)
	}
	if got := liveReplicas(f); got != 5 {
		t.Errorf("replicas = %d, want the hpa-controller's 5", got)
	}

	// A new manifest is applied, but not its replicas.
	d.Object["spec"].(map[string]any)["replicas"] = int64(3)
	setManifestImage(d, "app", "app:2")
	if res := f.apply(d, opts); res.Operation != apply.Updated {
		t.Errorf("apply of a new manifest: %s, want Updated", res.Operation)
	}
	if got := liveImage(f, "app"); got != "app:2" {
		t.Errorf("image = %s, want the new manifest's app:2", got)
	}
	if got := liveReplicas(f); got != 5 {
		t.Errorf("replicas after a new manifest = %d, want the hpa-controller's 5", got)
	}
	f.noWrites(d, opts)
}

// OCM leaves the ignored field out of the apply once the object exists; while work-agent is its only
// owner, the API server then deletes it and the Deployment falls back to 1 replica. Ferry keeps it.
func TestIgnoreFieldOnSpokePresentKeepsTheCreatedValueWhenTheManifestChanges(t *testing.T) {
	f := newFixture(t)
	opts := ssaIgnoring(false, apply.IgnoreField{Condition: apply.OnSpokePresent, JSONPaths: []string{".spec.replicas"}})
	d := f.manifest(ignoreFieldsDeployment)
	f.apply(d, opts)

	d.Object["spec"].(map[string]any)["replicas"] = int64(4)
	setManifestImage(d, "app", "app:2")
	f.apply(d, opts)
	if got := liveImage(f, "app"); got != "app:2" {
		t.Errorf("image = %s, want the new manifest's app:2", got)
	}
	if got := liveReplicas(f); got != 2 {
		t.Errorf("replicas = %d, want 2 from creation (neither the new manifest's 4 nor the default 1)", got)
	}
	f.noWrites(d, opts)

	// Nobody else took replicas: Ferry still owns them, so that deleting the object's other fields
	// later does not delete them either.
	var owner string
	for _, m := range liveDeployment(f).ManagedFields {
		if strings.Contains(string(m.FieldsV1.Raw), `"f:replicas"`) {
			owner += m.Manager + string(m.Operation)
		}
	}
	if owner != apply.DefaultFieldManager+string(metav1.ManagedFieldsOperationApply) {
		t.Errorf("spec.replicas is owned by %q, want only %s's apply", owner, apply.DefaultFieldManager)
	}
}

func TestIgnoreFieldOnSpokeChangeEnforcesTheManifestUntilAnotherClientChangesIt(t *testing.T) {
	f := newFixture(t)
	// Force, so that restoring the image another client changed below does not conflict.
	opts := ssaIgnoring(true, apply.IgnoreField{Condition: apply.OnSpokeChange, JSONPaths: []string{"{.spec.replicas}"}})
	d := f.manifest(ignoreFieldsDeployment)
	f.apply(d, opts)
	if got := liveReplicas(f); got != 2 {
		t.Fatalf("replicas after creation = %d, want the manifest's 2", got)
	}
	d.Object["spec"].(map[string]any)["replicas"] = int64(3)
	f.apply(d, opts)
	if got := liveReplicas(f); got != 3 {
		t.Fatalf("replicas = %d, want the changed manifest's 3 while nobody else changed them", got)
	}
	f.noWrites(d, opts)

	scaleAsHPA(f, "5")
	if res := f.noWrites(d, opts); res.Operation != apply.Unchanged {
		t.Errorf("re-apply after the spoke scaled: %s, want Unchanged", res.Operation)
	}
	if got := liveReplicas(f); got != 5 {
		t.Errorf("replicas = %d, want the hpa-controller's 5", got)
	}

	// A field that is not ignored is still put back, and the forced apply leaves replicas alone.
	patchAs(f, "kubectl-edit", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"app:edited"}]}}}}`)
	if res := f.apply(d, opts); res.Operation != apply.Updated {
		t.Errorf("apply after an edit of the image: %s, want Updated", res.Operation)
	}
	if got := liveImage(f, "app"); got != "app:1" {
		t.Errorf("image = %s, want the manifest's app:1 back", got)
	}
	if got := liveReplicas(f); got != 5 {
		t.Errorf("replicas after restoring the image = %d, want the hpa-controller's 5", got)
	}
	f.noWrites(d, opts)
}

// As in OCM, a new manifest applies its OnSpokeChange fields again: over another client's value with
// force, as a conflict without.
func TestIgnoreFieldOnSpokeChangeAppliesTheFieldsAgainWhenTheManifestChanges(t *testing.T) {
	f := newFixture(t)
	field := apply.IgnoreField{Condition: apply.OnSpokeChange, JSONPaths: []string{".spec.replicas"}}
	d := f.manifest(ignoreFieldsDeployment)
	f.apply(d, ssaIgnoring(false, field))
	scaleAsHPA(f, "5")

	d.Object["spec"].(map[string]any)["replicas"] = int64(4)
	_, err := f.applier.Apply(t.Context(), d, ssaIgnoring(false, field))
	if !apply.IsConflict(err) || !strings.Contains(err.Error(), `"hpa-controller"`) {
		t.Fatalf("apply of a new manifest without force: %v, want a conflict with hpa-controller", err)
	}
	f.apply(d, ssaIgnoring(true, field))
	if got := liveReplicas(f); got != 4 {
		t.Errorf("replicas = %d, want the new manifest's 4", got)
	}
	f.noWrites(d, ssaIgnoring(true, field))
}

func TestIgnoreFieldJSONPointerOnSpokeChangeKeepsAnotherClientsAnnotation(t *testing.T) {
	f := newFixture(t)
	opts := ssaIgnoring(true, apply.IgnoreField{Condition: apply.OnSpokeChange,
		JSONPointers: []string{"/metadata/annotations/example.com~1tuning"}})
	cm := f.manifest(`
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: "{{ns}}"
  annotations:
    example.com/tuning: low
data:
  mode: a
`)
	f.apply(cm, opts)
	tune := func(patch string) {
		t.Helper()
		if _, err := f.kube.CoreV1().ConfigMaps(f.ns).Patch(t.Context(), "settings", types.MergePatchType, []byte(patch),
			metav1.PatchOptions{FieldManager: "tuner"}); err != nil {
			t.Fatal(err)
		}
	}
	live := func() *corev1.ConfigMap {
		t.Helper()
		got, err := f.kube.CoreV1().ConfigMaps(f.ns).Get(t.Context(), "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := live().Annotations["example.com/tuning"]; got != "low" {
		t.Fatalf("annotation after creation = %q, want the manifest's low", got)
	}

	tune(`{"metadata":{"annotations":{"example.com/tuning":"high"}}}`)
	if res := f.noWrites(cm, opts); res.Operation != apply.Unchanged {
		t.Errorf("re-apply after the spoke tuned: %s, want Unchanged", res.Operation)
	}
	tune(`{"data":{"mode":"b"}}`)
	f.apply(cm, opts)
	got := live()
	if got.Data["mode"] != "a" {
		t.Errorf("data.mode = %q, want the manifest's a back", got.Data["mode"])
	}
	if got.Annotations["example.com/tuning"] != "high" {
		t.Errorf("annotation = %q, want the tuner's high", got.Annotations["example.com/tuning"])
	}
	f.noWrites(cm, opts)
}

func TestIgnoreFieldJQExpressionOnSpokePresentKeepsAnInjectedSidecarImage(t *testing.T) {
	f := newFixture(t)
	opts := ssaIgnoring(false, apply.IgnoreField{Condition: apply.OnSpokePresent,
		JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "sidecar") | .image`}})
	d := f.manifest(ignoreFieldsDeployment)
	f.apply(d, opts)
	if got := liveImage(f, "sidecar"); got != "proxy:1" {
		t.Fatalf("sidecar image after creation = %s, want the manifest's proxy:1", got)
	}

	patchAs(f, "mesh-injector", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"proxy:mesh"}]}}}}`)
	if res := f.noWrites(d, opts); res.Operation != apply.Unchanged {
		t.Errorf("re-apply after the injector changed the sidecar: %s, want Unchanged", res.Operation)
	}

	setManifestImage(d, "app", "app:2")
	setManifestImage(d, "sidecar", "proxy:2")
	f.apply(d, opts)
	if got := liveImage(f, "app"); got != "app:2" {
		t.Errorf("app image = %s, want the new manifest's app:2", got)
	}
	if got := liveImage(f, "sidecar"); got != "proxy:mesh" {
		t.Errorf("sidecar image = %s, want the injector's proxy:mesh", got)
	}
	f.noWrites(d, opts)
}

func TestIgnoreFieldSelectingNothingLeavesEveryFieldEnforced(t *testing.T) {
	f := newFixture(t)
	opts := ssaIgnoring(true, apply.IgnoreField{Condition: apply.OnSpokeChange,
		JSONPaths:         []string{".spec.paused", `.spec.template.spec.containers[?(@.name=="none")].image`},
		JSONPointers:      []string{"/spec/minReadySeconds"},
		JQPathExpressions: []string{".spec.template.spec.volumes[]?"},
	})
	d := f.manifest(ignoreFieldsDeployment)
	if res := f.apply(d, opts); res.Operation != apply.Created {
		t.Fatalf("first apply: %s, want Created", res.Operation)
	}
	f.noWrites(d, opts)
	scaleAsHPA(f, "5")
	f.apply(d, opts)
	if got := liveReplicas(f); got != 2 {
		t.Errorf("replicas = %d, want the manifest's 2 back: no selector names them", got)
	}
	f.noWrites(d, opts)
}

func TestIgnoreFieldInvalidExpressionsFailWithIgnoreFieldError(t *testing.T) {
	cases := []struct {
		name  string
		field apply.IgnoreField
		expr  string
	}{
		{"unparsable JSONPath", apply.IgnoreField{JSONPaths: []string{".spec.template.spec.containers[?(@.name=="}}, ".spec.template.spec.containers[?(@.name=="},
		{"unparsable JSON Pointer", apply.IgnoreField{JSONPointers: []string{"spec/replicas"}}, "spec/replicas"},
		{"JSON Pointer with a bad escape", apply.IgnoreField{JSONPointers: []string{"/metadata/annotations/a~2b"}}, "/metadata/annotations/a~2b"},
		{"unparsable jq expression", apply.IgnoreField{JQPathExpressions: []string{".spec.replicas |"}}, ".spec.replicas |"},
		{"jq expression failing at run time", apply.IgnoreField{JQPathExpressions: []string{".spec.replicas[]"}}, ".spec.replicas[]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			c.field.Condition = apply.OnSpokePresent
			before := f.writes.Load()
			_, err := f.applier.Apply(t.Context(), f.manifest(ignoreFieldsDeployment), ssaIgnoring(false, c.field))
			if !apply.IsIgnoreFieldError(err) {
				t.Fatalf("apply: %v, want an IgnoreFieldError", err)
			}
			if !strings.Contains(err.Error(), c.expr) {
				t.Errorf("message %q does not name the expression %q", err, c.expr)
			}
			if n := f.writes.Load() - before; n != 0 {
				t.Errorf("a failed apply sent %d writes, want 0", n)
			}
			if _, err := f.kube.AppsV1().Deployments(f.ns).Get(t.Context(), "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("get after a failed apply: %v, want NotFound", err)
			}
		})
	}
}
