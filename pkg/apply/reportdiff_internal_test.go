package apply

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/pkg/workreport"
)

func object(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// withRecord returns live carrying manifest as Ferry's inline last-applied record.
func withRecord(t *testing.T, live, manifest *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	data, err := json.Marshal(manifest.Object)
	if err != nil {
		t.Fatal(err)
	}
	out := live.DeepCopy()
	ann := out.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[LastAppliedAnnotation] = string(data)
	out.SetAnnotations(ann)
	return out
}

const reportedDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.26"}]
`

// The live Deployment as the API server keeps it: the manifest at nginx:1.25 with 3 replicas, defaults,
// status, an owner and a label someone added.
const liveDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ns
  labels: {app: web, team: a}
  resourceVersion: "7"
  ownerReferences: [{apiVersion: work.open-cluster-management.io/v1, kind: AppliedManifestWork, name: x, uid: u}]
spec:
  replicas: 3
  revisionHistoryLimit: 10
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.25", imagePullPolicy: IfNotPresent, terminationMessagePath: /dev/termination-log}]
      restartPolicy: Always
status: {replicas: 3}
`

func TestDiffOfAMissingObjectIsCreate(t *testing.T) {
	got := computeDiff(nil, object(t, reportedDeployment))
	if diff := cmp.Diff(&workreport.Diff{Create: true}, got); diff != "" {
		t.Errorf("diff of a missing object (-want +got):\n%s", diff)
	}
}

// The fields the manifest sets and the live object does not hold, with both values, sorted; what only
// the live object has (defaults, status, an owner, a label of someone else's) is no difference.
func TestDiffNamesTheFieldsTheManifestWouldChange(t *testing.T) {
	got := computeDiff(object(t, liveDeployment), object(t, reportedDeployment))
	want := &workreport.Diff{Fields: []workreport.FieldChange{
		{Path: ".spec.replicas", Live: "3", Want: "2"},
		{Path: ".spec.template.spec.containers[0].image", Live: `"nginx:1.25"`, Want: `"nginx:1.26"`},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diff (-want +got):\n%s", diff)
	}

	matching := object(t, liveDeployment)
	if err := unstructured.SetNestedField(matching.Object, int64(2), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(matching.Object, "spec", "template", "spec", "containers")
	containers[0].(map[string]any)["image"] = "nginx:1.26"
	_ = unstructured.SetNestedSlice(matching.Object, containers, "spec", "template", "spec", "containers")
	if got := computeDiff(matching, object(t, reportedDeployment)); got.Changes() {
		t.Errorf("a live object holding the manifest differs by %+v", got)
	}

	missing := object(t, liveDeployment)
	unstructured.RemoveNestedField(missing.Object, "metadata", "labels")
	got = computeDiff(missing, object(t, reportedDeployment))
	if len(got.Fields) != 3 || got.Fields[0] != (workreport.FieldChange{Path: ".metadata.labels", Live: "null", Want: `{"app":"web"}`}) {
		t.Errorf("a map the live object lacks is reported as %+v; want .metadata.labels null → {\"app\":\"web\"} first", got.Fields)
	}
}

// A field Ferry last applied (its inline record on the live object says so) that the manifest no longer
// sets is removed by an Update apply: it is reported with the wanted value null. One the live object
// does not have any more is no change, nor is one the manifest still sets.
func TestDiffNamesTheFieldsAnUpdateApplyWouldRemove(t *testing.T) {
	applied := object(t, reportedDeployment)
	applied.SetLabels(map[string]string{"app": "web", "tier": "front"})
	_ = unstructured.SetNestedField(applied.Object, int64(30), "spec", "minReadySeconds")
	_ = unstructured.SetNestedField(applied.Object, int64(5), "spec", "progressDeadlineSeconds")
	live := object(t, liveDeployment)
	live.SetLabels(map[string]string{"app": "web", "tier": "front", "team": "a"})
	_ = unstructured.SetNestedField(live.Object, int64(30), "spec", "minReadySeconds")
	// (progressDeadlineSeconds was since removed on the cluster.)

	got := computeDiff(withRecord(t, live, applied), object(t, reportedDeployment))
	want := &workreport.Diff{Fields: []workreport.FieldChange{
		{Path: ".metadata.labels.tier", Live: `"front"`, Want: "null"},
		{Path: ".spec.minReadySeconds", Live: "30", Want: "null"},
		{Path: ".spec.replicas", Live: "3", Want: "2"},
		{Path: ".spec.template.spec.containers[0].image", Live: `"nginx:1.25"`, Want: `"nginx:1.26"`},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diff (-want +got):\n%s", diff)
	}

	// A record that is not JSON is not read: only the manifest's own fields are compared.
	broken := live.DeepCopy()
	broken.SetAnnotations(map[string]string{LastAppliedAnnotation: "{"})
	if got := computeDiff(broken, object(t, reportedDeployment)); len(got.Fields) != 2 {
		t.Errorf("with a damaged record the diff is %+v; want the 2 fields the manifest sets", got.Fields)
	}
}

// Many fields: the first MaxDiffFields by path, and a count of the others.
func TestDiffListsAFewFieldsAndCountsTheRest(t *testing.T) {
	live := object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}, data: {}}`)
	manifest := object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}, data: {g: "7", a: "1", f: "6", b: "2", e: "5", c: "3", d: "4"}}`)
	got := computeDiff(live, manifest)
	var paths []string
	for _, f := range got.Fields {
		paths = append(paths, f.Path)
	}
	if want := []string{".data.a", ".data.b", ".data.c", ".data.d", ".data.e"}; !cmp.Equal(paths, want) || got.MoreFields != 2 {
		t.Errorf("fields %q and %d more; want %q and 2 more", paths, got.MoreFields, want)
	}
	if got.Fields[0].Live != "null" || got.Fields[0].Want != `"1"` {
		t.Errorf(".data.a: %s → %s; want null → \"1\"", got.Fields[0].Live, got.Fields[0].Want)
	}
}

// A Secret's values are never shown — not a changed one, an added one or one an Update would remove —
// only that they differ; its stringData is compared as the data the API server stores, so that a
// Secret written with stringData matches its live self.
func TestDiffOfASecretHidesItsValues(t *testing.T) {
	const (
		password = "hunter2-very-secret"
		token    = "tok-3141592653"
		old      = "old-value-to-remove"
	)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	manifest := object(t, fmt.Sprintf(`{apiVersion: v1, kind: Secret, metadata: {name: s, namespace: ns, labels: {app: web}},
		stringData: {password: %q, token: %q}, data: {same: %q}}`, password, token, b64("same")))
	live := object(t, fmt.Sprintf(`{apiVersion: v1, kind: Secret, metadata: {name: s, namespace: ns, labels: {app: db}},
		type: Opaque, data: {password: %q, same: %q, old: %q}}`, b64("wrong-"+password), b64("same"), b64(old)))
	applied := object(t, `{apiVersion: v1, kind: Secret, metadata: {name: s, namespace: ns}, data: {old: "x"}}`)

	got := computeDiff(withRecord(t, live, applied), manifest)
	want := &workreport.Diff{Fields: []workreport.FieldChange{
		{Path: ".data.old", Live: workreport.HiddenValue, Want: "null"},
		{Path: ".data.password", Live: workreport.HiddenValue, Want: workreport.HiddenValue},
		{Path: ".data.token", Live: "null", Want: workreport.HiddenValue},
		{Path: ".metadata.labels.app", Live: `"db"`, Want: `"web"`},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diff (-want +got):\n%s", diff)
	}
	msg := workreport.DiffCondition(*got).Message
	for _, v := range []string{password, token, old, b64(password), b64("wrong-" + password), b64(token), b64(old)} {
		if strings.Contains(msg, v) {
			t.Errorf("the WouldChange message %q shows a secret value", msg)
		}
	}

	// A Secret without data at all on the cluster: the whole map differs, still hidden.
	bare := object(t, `{apiVersion: v1, kind: Secret, metadata: {name: s, namespace: ns, labels: {app: web}}}`)
	withData := object(t, fmt.Sprintf(`{apiVersion: v1, kind: Secret, metadata: {name: s, namespace: ns, labels: {app: web}}, data: {password: %q}}`, b64(password)))
	if got := computeDiff(withData, bare); got.Changes() {
		t.Errorf("a manifest without data differs from a Secret with data by %+v", got)
	}
	got = computeDiff(bare, withData)
	if want := []workreport.FieldChange{{Path: ".data", Live: "null", Want: workreport.HiddenValue}}; !cmp.Equal(got.Fields, want) {
		t.Errorf("data missing on the cluster: %+v; want %+v", got.Fields, want)
	}

	// stringData equal to the live data: nothing differs.
	same := object(t, fmt.Sprintf(`{apiVersion: v1, kind: Secret, metadata: {name: s, namespace: ns}, stringData: {password: %q}}`, password))
	if got := computeDiff(withData, same); got.Changes() {
		t.Errorf("stringData holding the live data differs by %+v", got)
	}
}
