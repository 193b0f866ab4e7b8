package statusview

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// A work's line: healthy only when every manifest of its spec is reported Healthy for its generation
// (one not reported yet is Unknown), and DRIFTED counts the Drifted reports of that generation only.
func TestForFleetWork(t *testing.T) {
	mw := work(t, "cluster1", 3, configMap, deployment)
	mw.Labels = map[string]string{v1alpha2.LabelAppConfigNamespace: "shop", v1alpha2.LabelAppConfigName: "hello"}
	mw.Status.Conditions = []metav1.Condition{cond(workv1.WorkApplied, metav1.ConditionTrue, 3, "Applied", ""),
		cond(workv1.WorkAvailable, metav1.ConditionTrue, 3, "Available", "")}
	drift := func(gen int64) metav1.Condition {
		return cond(workreport.ConditionDrifted, metav1.ConditionTrue, gen, workreport.ReasonDriftReverted,
			workreport.DriftMessage(workreport.Drift{Count: 1, Managers: []string{"kubectl-edit"}, Fields: []string{".data.mode"}, Time: time.Now()}))
	}
	cm := healthyReport(configMap, 0, 3)
	cm.Conditions = append(cm.Conditions, drift(3))
	mw.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{cm}

	w := ForFleetWork(mw)
	if w.AppConfig != "shop/hello" || w.Applied != metav1.ConditionTrue || w.Health != v1alpha2.HealthUnknown || w.Drifted != 1 || w.Fine() {
		t.Errorf("one of two manifests reported: %+v, want shop/hello applied, health Unknown, 1 drifted, not fine", w)
	}

	dep := healthyReport(deployment, 1, 3)
	dep.Conditions = append(dep.Conditions, drift(2))
	mw.Status.ResourceStatus.Manifests = append(mw.Status.ResourceStatus.Manifests, dep)
	if w := ForFleetWork(mw); w.Health != v1alpha2.Healthy || w.Drifted != 1 || !w.Fine() {
		t.Errorf("both reported, the Deployment's drift of generation 2: %+v, want Healthy, fine, 1 drifted", w)
	}
	if objs := DriftedObjectsOf(mw); len(objs) != 1 || objs[0].Kind != "ConfigMap" || objs[0].AppConfig != "shop/hello" || objs[0].Work != "hello" {
		t.Errorf("drifted objects %+v, want the ConfigMap of work hello", objs)
	}
}

// From an AppConfig's status: a cluster's DRIFTED counts the objects status.drift.latest names on it,
// with a + when the status names fewer than it counts, and the notes say what the status leaves out.
func TestFleetWorksFromStatus(t *testing.T) {
	app := &v1alpha2.ApplicationConfiguration{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "hello"},
		Status: v1alpha2.ApplicationConfigurationStatus{
			Summary:   &v1alpha2.Summary{Clusters: 23, Applied: "23/23", Available: "23/23", Healthy: "23/23"},
			Placement: &v1alpha2.PlacementStatus{Clusters: []string{"eu-1", "eu-2"}},
			Drift: &v1alpha2.DriftStatus{Clusters: 2, Objects: 7, Latest: []v1alpha2.DriftedObject{
				{Cluster: "eu-2", Kind: "ConfigMap", Name: "a", Count: 1}, {Cluster: "eu-2", Kind: "ConfigMap", Name: "b", Count: 1}}},
		}}
	v := ForFleetWorksStatus("shop", []*v1alpha2.ApplicationConfiguration{app})
	var out bytes.Buffer
	if err := Write(&out, FormatTable, v); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"eu-1      shop.hello   shop/hello   True      True        Healthy   0+        -\n",
		"eu-2      shop.hello   shop/hello   True      True        Healthy   2+        -\n",
		"(and 21 more clusters delivered to, which the statuses do not name)\n",
		FleetStatusOnlyNote("shop"),
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}

	d := ForFleetDriftStatus("shop", []*v1alpha2.ApplicationConfiguration{app})
	out.Reset()
	if err := Write(&out, FormatTable, d); err != nil {
		t.Fatal(err)
	}
	if len(d.Objects) != 2 || !strings.Contains(out.String(), "  shop/hello: 7 objects on 2 clusters, 2 listed\n") {
		t.Errorf("drift from the status: %+v\n%s\nwant the 2 objects named and the counts of all 7", d, out.String())
	}
}
