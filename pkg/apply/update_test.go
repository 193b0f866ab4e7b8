package apply_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ferry-mc/ferry/pkg/apply"
)

const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: {{ns}}
  labels: {app: web}
spec:
  minReadySeconds: 60
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.25
`

// The three-way merge: a field the last manifest set and the new one omits is removed.
func TestUpdateRemovesAFieldTheManifestNoLongerSets(t *testing.T) {
	f := newFixture(t)
	d := f.manifest(deployment)
	if res := f.apply(d, apply.Options{}); res.Operation != apply.Created {
		t.Fatalf("first apply: %s, want Created", res.Operation)
	}
	live := f.get(apply.Result{Resource: appsv1.SchemeGroupVersion.WithResource("deployments"), Namespaced: true}, "web")
	if got := nested(t, live, "spec", "minReadySeconds"); got != int64(60) {
		t.Fatalf("minReadySeconds after create = %v, want 60", got)
	}

	delete(d.Object["spec"].(map[string]any), "minReadySeconds")
	res := f.apply(d, apply.Options{})
	if res.Operation != apply.Updated {
		t.Fatalf("apply without minReadySeconds: %s, want Updated", res.Operation)
	}
	if got := nested(t, f.get(res, "web"), "spec", "minReadySeconds"); got != nil {
		t.Errorf("minReadySeconds = %v, want it removed", got)
	}
}

// The three-way merge: what others set — a label, replicas scaled by an HPA — survives the next apply, while a
// field the manifest owns is put back.
func TestUpdateKeepsFieldsSetByOthers(t *testing.T) {
	f := newFixture(t)
	d := f.manifest(deployment)
	delete(d.Object["spec"].(map[string]any), "replicas")
	res := f.apply(d, apply.Options{})

	patch := `{"metadata":{"labels":{"team":"payments"}},"spec":{"replicas":7,"minReadySeconds":5}}`
	if _, err := f.kube.AppsV1().Deployments(f.ns).Patch(t.Context(), "web", types.StrategicMergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	res = f.apply(d, apply.Options{})
	if res.Operation != apply.Updated {
		t.Fatalf("apply after the other client's change: %s, want Updated (minReadySeconds is the manifest's)", res.Operation)
	}
	live := f.get(res, "web")
	if got := nested(t, live, "metadata", "labels", "team"); got != "payments" {
		t.Errorf("label set by another client = %v, want kept", got)
	}
	if got := nested(t, live, "spec", "replicas"); got != int64(7) {
		t.Errorf("replicas set by another client = %v, want 7 kept", got)
	}
	if got := nested(t, live, "spec", "minReadySeconds"); got != int64(60) {
		t.Errorf("minReadySeconds (the manifest's) = %v, want 60 restored", got)
	}
	f.noWrites(d, apply.Options{})
}

// Update strategies: fields the API server defaults (serviceAccountName, revisionHistoryLimit, strategy, ...)
// are not in the manifest and cause no write on resync.
func TestUpdateWritesNothingWhenNothingChanged(t *testing.T) {
	f := newFixture(t)
	d := f.manifest(deployment)
	f.apply(d, apply.Options{})
	for range 3 {
		if res := f.noWrites(d, apply.Options{}); res.Operation != apply.Unchanged {
			t.Errorf("resync: %s, want Unchanged", res.Operation)
		}
	}
}

// The three-way merge: a Service's allocated clusterIP (immutable, not in the manifest) never causes an error or
// a write; a change of the manifest still applies.
func TestUpdateLeavesAServicesAllocatedClusterIPAlone(t *testing.T) {
	f := newFixture(t)
	svc := f.manifest(`
apiVersion: v1
kind: Service
metadata: {name: web, namespace: {{ns}}}
spec:
  selector: {app: web}
  ports: [{port: 80, protocol: TCP}]
`)
	res := f.apply(svc, apply.Options{})
	ip := nested(t, res.Object, "spec", "clusterIP")
	if ip == nil || ip == "" {
		t.Fatalf("no clusterIP allocated: %v", res.Object.Object["spec"])
	}
	f.noWrites(svc, apply.Options{})

	svc.Object["spec"].(map[string]any)["ports"] = []any{map[string]any{"port": int64(8080), "protocol": "TCP"}}
	res = f.apply(svc, apply.Options{})
	if res.Operation != apply.Updated {
		t.Fatalf("apply with a new port: %s, want Updated", res.Operation)
	}
	live := f.get(res, "web")
	if got := nested(t, live, "spec", "clusterIP"); got != ip {
		t.Errorf("clusterIP = %v, want %v kept", got, ip)
	}
	ports := nested(t, live, "spec", "ports").([]any)
	if len(ports) != 1 || ports[0].(map[string]any)["port"] != int64(8080) {
		t.Errorf("ports = %v, want only 8080", ports)
	}
}

// Update strategies: a Job without spec.selector gets a defaulted, immutable selector and pod labels; applying it
// again must neither fail nor write.
func TestUpdateReappliesAJobWithoutSelector(t *testing.T) {
	f := newFixture(t)
	job := f.manifest(`
apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: {{ns}}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, command: ["true"]}]
`)
	res := f.apply(job, apply.Options{})
	if nested(t, res.Object, "spec", "selector") == nil {
		t.Fatalf("the API server did not default spec.selector: %v", res.Object.Object["spec"])
	}
	f.noWrites(job, apply.Options{})

	// A label on the Job itself is mutable and applies.
	job.SetLabels(map[string]string{"tier": "batch"})
	if res := f.apply(job, apply.Options{}); res.Operation != apply.Updated {
		t.Errorf("apply with a new label: %s, want Updated", res.Operation)
	}
}

// A custom resource (no strategic-merge metadata) goes through a JSON merge patch with the same
// add / change / remove semantics.
func TestUpdateMergesCustomResources(t *testing.T) {
	f := newFixture(t)
	// ManagedCluster is a CRD the test cluster serves.
	mc := f.manifest(`
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata:
  name: {{ns}}
  labels: {env: dev, region: eu}
spec:
  hubAcceptsClient: true
  leaseDurationSeconds: 30
  taints: [{key: maintenance, effect: NoSelect}]
`)
	res := f.apply(mc, apply.Options{})
	if res.Namespaced {
		t.Fatal("ManagedCluster mapped as namespaced")
	}
	mc.SetLabels(map[string]string{"env": "prod"})
	spec := mc.Object["spec"].(map[string]any)
	delete(spec, "taints")
	spec["leaseDurationSeconds"] = int64(45)
	res = f.apply(mc, apply.Options{})
	if res.Operation != apply.Updated {
		t.Fatalf("second apply: %s, want Updated", res.Operation)
	}
	live := f.get(res, f.ns)
	if got := live.GetLabels(); got["env"] != "prod" || got["region"] != "" {
		t.Errorf("labels = %v, want env=prod and region removed", got)
	}
	if got := nested(t, live, "spec", "taints"); got != nil {
		t.Errorf("taints = %v, want removed", got)
	}
	if got := nested(t, live, "spec", "leaseDurationSeconds"); got != int64(45) {
		t.Errorf("leaseDurationSeconds = %v, want 45", got)
	}
	f.noWrites(mc, apply.Options{})
}
