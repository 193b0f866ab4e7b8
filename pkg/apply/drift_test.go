package apply_test

import (
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-mc/ferry/pkg/apply"
)

// editReplicas changes the Deployment's replicas as `kubectl edit` does: a full update (PUT) under
// kubectl's manager name for edits.
func editReplicas(f *fixture, replicas int32) {
	f.t.Helper()
	d, err := f.kube.AppsV1().Deployments(f.ns).Get(f.t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	d.Spec.Replicas = &replicas
	if _, err := f.kube.AppsV1().Deployments(f.ns).Update(f.t.Context(), d, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		f.t.Fatal(err)
	}
}

// An edit on the cluster of fields the manifest sets is put back by the next apply and reported: which
// fields, who changed them (the manager the API server recorded), when. Fields the manifest does not
// set, changed by others, are neither put back nor reported; nor is a change of the manifest itself.
func TestUpdateReportsTheDriftItPutsBack(t *testing.T) {
	for _, strategy := range []apply.StrategyType{apply.Update, apply.ServerSideApply} {
		t.Run(string(strategy), func(t *testing.T) {
			f := newFixture(t)
			d := f.manifest(deployment)
			// Under ServerSideApply an edit takes the field's ownership: only force takes it back.
			opts := apply.Options{Strategy: strategy, Force: strategy == apply.ServerSideApply}
			if res := f.apply(d, opts); res.Operation != apply.Created || res.Drift != nil {
				t.Fatalf("first apply: %s, drift %+v; want Created without drift", res.Operation, res.Drift)
			}
			before := metav1.Now()
			editReplicas(f, 5)
			setImage(f, "nginx:edited")

			res := f.apply(d, opts)
			if res.Operation != apply.Updated || res.Drift == nil {
				t.Fatalf("apply after the edit: %s, drift %+v; want Updated with drift", res.Operation, res.Drift)
			}
			if want := []string{".spec.replicas", ".spec.template.spec.containers[0].image"}; !slices.Equal(res.Drift.Fields, want) || res.Drift.MoreFields != 0 {
				t.Errorf("drifted fields %q (+%d), want %q", res.Drift.Fields, res.Drift.MoreFields, want)
			}
			if !slices.Equal(res.Drift.Managers, []string{"kubectl-edit"}) {
				t.Errorf("drift made by %q, want kubectl-edit", res.Drift.Managers)
			}
			if res.Drift.Time == nil || res.Drift.Time.Add(1e9).Before(before.Time) {
				t.Errorf("drift time %v, want the edit's (after %v)", res.Drift.Time, before)
			}
			if got := nested(t, f.get(res, "web"), "spec", "replicas"); got != int64(2) {
				t.Errorf("replicas = %v, want the manifest's 2 put back", got)
			}

			if res := f.noWrites(d, opts); res.Operation != apply.Unchanged || res.Drift != nil {
				t.Errorf("apply once put back: %s, drift %+v; want Unchanged without drift", res.Operation, res.Drift)
			}
			d.Object["spec"].(map[string]any)["minReadySeconds"] = int64(30)
			if res := f.apply(d, opts); res.Operation != apply.Updated || res.Drift != nil {
				t.Errorf("apply of a changed manifest: %s, drift %+v; want Updated without drift", res.Operation, res.Drift)
			}
		})
	}
}

// A label added on the cluster is the cluster's: no drift. Many fields changed at once are reported by
// the first few, and a count of the rest.
func TestDriftNamesAFewFieldsAndCountsTheRest(t *testing.T) {
	f := newFixture(t)
	cm := f.manifest(`
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: "{{ns}}", labels: {app.kubernetes.io/name: settings}}
data: {a: "1", b: "1", c: "1", d: "1", e: "1", f: "1", g: "1"}
`)
	res := f.apply(cm, apply.Options{})
	live, err := f.kube.CoreV1().ConfigMaps(f.ns).Get(t.Context(), "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live.Labels["team"] = "payments"
	if _, err := f.kube.CoreV1().ConfigMaps(f.ns).Update(t.Context(), live, metav1.UpdateOptions{FieldManager: "labeller"}); err != nil {
		t.Fatal(err)
	}
	if res = f.noWrites(cm, apply.Options{}); res.Drift != nil {
		t.Fatalf("a label added on the cluster reported as drift: %+v", res.Drift)
	}
	live, err = f.kube.CoreV1().ConfigMaps(f.ns).Get(t.Context(), "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k := range live.Data {
		live.Data[k] = "2"
	}
	live.Labels["app.kubernetes.io/name"] = "renamed"
	if _, err := f.kube.CoreV1().ConfigMaps(f.ns).Update(t.Context(), live, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	res = f.apply(cm, apply.Options{})
	if res.Drift == nil {
		t.Fatalf("apply after 8 fields changed: %s without drift", res.Operation)
	}
	want := []string{".data.a", ".data.b", ".data.c", ".data.d", ".data.e"}
	if !slices.Equal(res.Drift.Fields, want) || res.Drift.MoreFields != 3 {
		t.Errorf("drifted fields %q (+%d), want %q (+3: .data.f, .data.g, %s)", res.Drift.Fields, res.Drift.MoreFields, want,
			fmt.Sprintf(".metadata.labels[%s]", "app.kubernetes.io/name"))
	}
	if !slices.Equal(res.Drift.Managers, []string{"kubectl-edit"}) {
		t.Errorf("drift made by %q, want kubectl-edit alone (the labeller changed none of the manifest's fields)", res.Drift.Managers)
	}
}
