package apply

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/pkg/workload"
)

const benchDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  labels: {app: web, app.oam.dev/component: web}
  annotations: {app.oam.dev/generation: "3"}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        ports: [{containerPort: 80}]
        env: [{name: A, value: "1"}, {name: B, value: "2"}]
        resources: {requests: {cpu: 100m, memory: 64Mi}}
      - name: sidecar
        image: busybox
        command: [sh, -c, sleep 3600]
`

func benchObject(b *testing.B, y string) *unstructured.Unstructured {
	b.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		b.Fatal(err)
	}
	return u
}

// liveFrom returns what the API server would hold after applying desired: the record annotation plus
// defaulted fields the manifest does not set.
func liveFrom(b *testing.B, desired *unstructured.Unstructured) []byte {
	b.Helper()
	rec, err := newRecord(desired, "k", nil)
	if err != nil {
		b.Fatal(err)
	}
	live := rec.annotate(desired)
	live.SetResourceVersion("12345")
	live.SetUID("3f1b2c4d-0000-0000-0000-000000000000")
	_ = unstructured.SetNestedField(live.Object, int64(10), "spec", "revisionHistoryLimit")
	_ = unstructured.SetNestedField(live.Object, "default", "spec", "template", "spec", "serviceAccountName")
	_ = unstructured.SetNestedField(live.Object, map[string]any{"replicas": int64(3), "readyReplicas": int64(3)}, "status")
	data, err := json.Marshal(live.Object)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// The steady-state cost of Update: computing an empty 3-way strategic merge patch.
func BenchmarkThreeWayPatchUnchangedDeployment(b *testing.B) {
	d := benchObject(b, benchDeployment)
	current := liveFrom(b, d)
	rec, _ := newRecord(d, "k", nil)
	modified, _ := json.Marshal(rec.annotate(d).Object)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := threeWayPatch(rec.data, modified, current, d); err != nil {
			b.Fatal(err)
		}
	}
}

// A custom resource takes the JSON merge path.
func BenchmarkThreeWayPatchUnchangedCustomResource(b *testing.B) {
	d := benchObject(b, benchDeployment)
	d.SetAPIVersion("example.com/v1")
	d.SetKind("Widget")
	current := liveFrom(b, d)
	rec, _ := newRecord(d, "k", nil)
	modified, _ := json.Marshal(rec.annotate(d).Object)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := threeWayPatch(rec.data, modified, current, d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHash(b *testing.B) {
	d := benchObject(b, benchDeployment)
	b.ReportAllocs()
	for b.Loop() {
		_ = workload.Hash(d)
	}
}

// The steady-state check of ServerSideApply.
func BenchmarkContains(b *testing.B) {
	d := benchObject(b, benchDeployment)
	var live map[string]any
	if err := json.Unmarshal(liveFrom(b, d), &live); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !contains(live, d.Object) {
			b.Fatal("live object does not contain the manifest")
		}
	}
}

// The steady-state decision of Update before any patch is computed.
func BenchmarkInSyncDeployment(b *testing.B) {
	d := benchObject(b, benchDeployment)
	live := &unstructured.Unstructured{}
	if err := json.Unmarshal(liveFrom(b, d), &live.Object); err != nil {
		b.Fatal(err)
	}
	r := &request{desired: d, current: live}
	rec, _ := newRecord(d, "k", nil)
	b.ReportAllocs()
	for b.Loop() {
		if !inSync(r, rec) {
			b.Fatal("not in sync")
		}
	}
}
