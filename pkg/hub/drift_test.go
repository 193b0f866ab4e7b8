package hub_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/internal/statusview"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/render"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// reportAsAgent writes the status of the AppConfig's work on cluster as ferry-agent writes it for the
// work's generation: every manifest applied, available and healthy, those named in drifted (by object
// name) with their Drifted condition for the generation driftGen (0: the work's), and the work's own
// Drifted condition naming them. It returns the generation reported on.
func (f *fixture) reportAsAgent(cluster, app string, drifted map[string]workreport.Drift, driftGen int64) int64 {
	f.t.Helper()
	var gen int64
	f.eventually("report on the work of "+app+" on "+cluster, func(ctx context.Context) (bool, error) {
		mw, err := f.work(ctx, cluster, app)
		if err != nil {
			return false, err
		}
		gen = mw.Generation
		now := metav1.Now()
		cond := func(typ string, status metav1.ConditionStatus, g int64, msg string) metav1.Condition {
			return metav1.Condition{Type: typ, Status: status, Reason: "Reported", Message: msg, ObservedGeneration: g, LastTransitionTime: now}
		}
		mw.Status = workv1.ManifestWorkStatus{Conditions: []metav1.Condition{
			cond(workv1.WorkApplied, metav1.ConditionTrue, gen, ""), cond(workv1.WorkAvailable, metav1.ConditionTrue, gen, "")}}
		var named []string
		for i, m := range mw.Spec.Workload.Manifests {
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(m.Raw); err != nil {
				return false, err
			}
			gvk := obj.GroupVersionKind()
			mc := workv1.ManifestCondition{
				ResourceMeta: workv1.ManifestResourceMeta{Ordinal: int32(i), Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind,
					Resource: strings.ToLower(gvk.Kind) + "s", Name: obj.GetName(), Namespace: obj.GetNamespace()},
				Conditions: []metav1.Condition{cond(workv1.ManifestApplied, metav1.ConditionTrue, gen, ""), cond(workv1.ManifestAvailable, metav1.ConditionTrue, gen, ""),
					cond(workv1.ManifestProgressing, metav1.ConditionFalse, gen, ""), cond(workv1.ManifestDegraded, metav1.ConditionFalse, gen, "")},
			}
			if d, ok := drifted[obj.GetName()]; ok {
				mc.Conditions = append(mc.Conditions, metav1.Condition{Type: workreport.ConditionDrifted, Status: metav1.ConditionTrue,
					Reason: workreport.ReasonDriftReverted, Message: workreport.DriftMessage(d), ObservedGeneration: cmp.Or(driftGen, gen), LastTransitionTime: now})
				named = append(named, fmt.Sprintf("%s %s/%s by %s (%d)", gvk.Kind, obj.GetNamespace(), obj.GetName(), d.Managers[0], d.Count))
			}
			mw.Status.ResourceStatus.Manifests = append(mw.Status.ResourceStatus.Manifests, mc)
		}
		if len(named) > 0 {
			meta.SetStatusCondition(&mw.Status.Conditions, metav1.Condition{Type: workreport.ConditionDrifted, Status: metav1.ConditionTrue,
				Reason: workreport.ReasonDriftReverted, ObservedGeneration: cmp.Or(driftGen, gen), LastTransitionTime: now,
				Message: fmt.Sprintf("%d of %d objects were changed on the cluster and put back: %s", len(named), len(mw.Spec.Workload.Manifests), strings.Join(named, ", "))})
		}
		return true, f.hub.Status().Update(ctx, mw)
	})
	return gen
}

// The AppConfig's status counts what its agents report changed on their clusters and put back, and
// names the latest: a work reported on as ferry-agent reports it, one of its two objects edited twice
// with kubectl edit, shows in status.drift (1 cluster of 2, 1 object, that object with who, what, when
// and how often) while the clusters stay fine; drift no longer reported, or reported for the generation
// before the hub delivered a new one, leaves no drift in the status at all.
func TestAppConfigCountsDriftOfTheDeliveredGeneration(t *testing.T) {
	f := setup(t)
	drifting, steady := "drifting-"+f.ns, "steady-"+f.ns
	f.addManagedCluster(drifting, nil)
	f.addManagedCluster(steady, nil)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"), f.settingsComponent("settings", "nginx:1"))
	f.waitLatest("web", "web-v1")
	f.waitLatest("settings", "settings-v1")
	f.createApp(f.appConfig("shop", onClusters(drifting, steady),
		v1alpha2.ApplicationConfigurationComponent{ComponentName: "web"}, v1alpha2.ApplicationConfigurationComponent{ComponentName: "settings"}))
	for _, c := range []string{drifting, steady} {
		f.waitWork(c, "shop", "delivered with both objects", func(mw *workv1.ManifestWork) bool { return len(mw.Spec.Workload.Manifests) == 2 })
	}

	edited := time.Now().UTC().Truncate(time.Second) // a condition's message keeps seconds
	edit := map[string]workreport.Drift{"settings": {Count: 2, Managers: []string{"kubectl-edit"}, Fields: []string{".data.image"}, Time: edited}}
	f.reportAsAgent(steady, "shop", nil, 0)
	gen := f.reportAsAgent(drifting, "shop", edit, 0)
	app := f.waitApp("shop", "drift on one cluster", func(a *v1alpha2.ApplicationConfiguration) bool { return a.Status.Drift != nil })
	want := &v1alpha2.DriftStatus{Clusters: 1, Objects: 1, Latest: []v1alpha2.DriftedObject{{Cluster: drifting, Kind: "ConfigMap", Namespace: f.ns,
		Name: "settings", Managers: []string{"kubectl-edit"}, Fields: []string{".data.image"}, Count: 2, Time: metav1.NewTime(edited)}}}
	if !equality.Semantic.DeepEqual(app.Status.Drift, want) {
		t.Errorf("status.drift %s, want %s", asJSON(app.Status.Drift), asJSON(want))
	}
	app = f.waitApp("shop", "both clusters counted healthy", func(a *v1alpha2.ApplicationConfiguration) bool {
		return a.Status.Summary != nil && a.Status.Summary.Healthy == "2/2"
	})
	if len(app.Status.Clusters) != 0 || app.Status.Drift == nil {
		t.Errorf("clusters listed %+v, drift %+v: want no cluster listed (drift put back is no fault) and the drift still counted", app.Status.Clusters, app.Status.Drift)
	}

	f.reportAsAgent(drifting, "shop", nil, 0)
	f.waitApp("shop", "no drift once no object is reported drifted", func(a *v1alpha2.ApplicationConfiguration) bool { return a.Status.Drift == nil })

	// Drift of generation gen, then a new delivery (generation gen+1) the agent has not reported on yet.
	f.reportAsAgent(drifting, "shop", edit, 0)
	f.waitApp("shop", "drift reported again", func(a *v1alpha2.ApplicationConfiguration) bool { return a.Status.Drift != nil })
	f.updateComponent("settings", func(c *v1alpha2.Component) { c.Spec.Workload = settingsWorkload("nginx:2") })
	f.waitWork(drifting, "shop", "delivered anew", func(mw *workv1.ManifestWork) bool { return mw.Generation > gen })
	f.waitApp("shop", "no drift of the generation before the delivery", func(a *v1alpha2.ApplicationConfiguration) bool { return a.Status.Drift == nil })
	// Reports on the new delivery, one carrying the drift of the one before (as an agent never does).
	f.reportAsAgent(steady, "shop", nil, 0)
	f.reportAsAgent(drifting, "shop", edit, gen)
	app = f.waitApp("shop", "both clusters report on the new delivery", func(a *v1alpha2.ApplicationConfiguration) bool {
		return a.Status.Summary != nil && a.Status.Summary.Applied == "2/2"
	})
	if app.Status.Drift != nil {
		t.Errorf("status.drift %s from drift reported for generation %d of a work at generation %d; want none", asJSON(app.Status.Drift), gen, gen+1)
	}
}

func asJSON(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(raw)
}

// What ferry-agent puts back is shown on the AppConfig: a delivered ConfigMap edited on cluster1 (as
// kubectl edit does) is reported by the real agent and counted on the hub, naming cluster1, the field
// and the manager; cluster2, untouched, is not counted.
func TestDriftPutBackByTheAgentIsShownOnTheAppConfig(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub, f.settingsComponent("settings", "nginx:1"))
	f.waitLatest("settings", "settings-v1")
	f.createApp(f.appConfig("shop", onClusters(clusters...), v1alpha2.ApplicationConfigurationComponent{ComponentName: "settings"}))
	f.waitApp("shop", "applied on both clusters", func(a *v1alpha2.ApplicationConfiguration) bool {
		return a.Status.Summary != nil && a.Status.Summary.Applied == "2/2"
	})
	if app, err := f.app(t.Context(), "shop"); err != nil || app.Status.Drift != nil {
		t.Fatalf("drift before any edit: %+v (%v), want none", app.Status.Drift, err)
	}

	f.eventually("edit the ConfigMap on cluster1 as kubectl edit does", func(ctx context.Context) (bool, error) {
		cm := &corev1.ConfigMap{}
		if err := f.spokes["cluster1"].Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "settings"}, cm); err != nil {
			return false, err
		}
		cm.Data["image"] = "nginx:edited"
		return true, f.spokes["cluster1"].Update(ctx, cm, client.FieldOwner("kubectl-edit"))
	})
	app := f.waitApp("shop", "drift on cluster1", func(a *v1alpha2.ApplicationConfiguration) bool { return a.Status.Drift != nil })
	d := app.Status.Drift
	if d.Clusters != 1 || d.Objects != 1 || len(d.Latest) != 1 {
		t.Fatalf("status.drift %s, want 1 cluster, 1 object, and that object", asJSON(d))
	}
	if o := d.Latest[0]; o.Cluster != "cluster1" || o.Kind != "ConfigMap" || o.Name != "settings" || o.Count != 1 ||
		!reflect.DeepEqual(o.Managers, []string{"kubectl-edit"}) || !reflect.DeepEqual(o.Fields, []string{".data.image"}) {
		t.Errorf("drifted object %s, want cluster1's ConfigMap settings changed once by kubectl-edit in .data.image", asJSON(o))
	}

	// The fleet views read the same reports: `kubectl ferry get works --drifted` keeps cluster1's work
	// alone, and `kubectl ferry drift` names its ConfigMap, kubectl-edit and the field.
	works, err := f.works(t.Context(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	drifted := map[string]int32{}
	var objects []statusview.FleetDriftedObject
	for i := range works {
		drifted[works[i].Namespace] = statusview.ForFleetWork(&works[i]).Drifted
		objects = append(objects, statusview.DriftedObjectsOf(&works[i])...)
	}
	if !reflect.DeepEqual(drifted, map[string]int32{"cluster1": 1, "cluster2": 0}) {
		t.Errorf("drifted objects per cluster as get works counts them: %v, want cluster1's 1 and none on cluster2", drifted)
	}
	if len(objects) != 1 || objects[0].Cluster != "cluster1" || objects[0].Name != "settings" ||
		!reflect.DeepEqual(objects[0].Managers, []string{"kubectl-edit"}) || !reflect.DeepEqual(objects[0].Fields, []string{".data.image"}) {
		t.Errorf("kubectl ferry drift would list %s, want cluster1's ConfigMap settings changed by kubectl-edit in .data.image", asJSON(objects))
	}
}
