package hub_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ferry-mc/ferry/internal/statusview"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
	"github.com/ferry-mc/ferry/pkg/render"
)

// shopEntry is component web with image nginx:2 and a ScalerTrait: on a spoke, the Deployment web and
// the ScalerTrait web-scalertrait.
func shopEntry() v1alpha2.ApplicationConfigurationComponent {
	return v1alpha2.ApplicationConfigurationComponent{
		ComponentName:   "web",
		ParameterValues: []v1alpha2.ComponentParameterValue{param("image", `"nginx:2"`)},
		Traits:          []v1alpha2.ComponentTrait{traitOf(scalerTraitGVK, `{"replicaCount":2}`)},
	}
}

// waitShopOn waits until the shop's Deployment (image nginx:2) and trait are on the cluster, and
// returns their UIDs.
func (f *fixture) waitShopOn(cluster, image string) (deployment, trait types.UID) {
	f.t.Helper()
	d := f.waitImage(cluster, "web", image)
	tr := f.waitSpokeObject(cluster, scalerTraitGVK, "web-scalertrait", "points at the Deployment web",
		func(u *unstructured.Unstructured) bool { return workloadRefName(u) == "web" })
	return d.UID, tr.GetUID()
}

// waitShopGone waits until the shop's objects are removed from the cluster.
func (f *fixture) waitShopGone(cluster string) {
	f.t.Helper()
	f.waitSpokeGone(cluster, appsv1.SchemeGroupVersion.WithKind("Deployment"), "web")
	f.waitSpokeGone(cluster, scalerTraitGVK, "web-scalertrait")
}

// Placement by a ManagedCluster label selector: the AppConfig reaches the spokes of the clusters it
// selects and reports what their agents did; relabelling a cluster moves it (the ManifestWork of the
// cluster that left is deleted and its objects removed from that spoke; the cluster that joined gets
// them); deleting the AppConfig removes it everywhere.
func TestAppConfigIsDeliveredToItsClustersAndFollowsThem(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	key := "ferry.io/test-" + f.ns
	for _, c := range clusters {
		f.labelCluster(c, key, "prod")
	}
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	f.createApp(f.appConfig("shop", &v1alpha2.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{key: "prod"}}}, shopEntry()))

	for _, c := range clusters {
		mw := f.waitWork(c, "shop", "the workload and its trait", func(mw *workv1.ManifestWork) bool { return len(mw.Spec.Workload.Manifests) == 2 })
		if mw.Labels[hub.LabelAppConfigNamespace] != f.ns || mw.Labels[hub.LabelAppConfigName] != "shop" {
			t.Errorf("ManifestWork on %s labelled %v", c, mw.Labels)
		}
		f.waitShopOn(c, "nginx:2")
	}
	app := f.waitDelivered("shop", clusters...)
	if len(app.Status.Workloads) != 1 || app.Status.Workloads[0].ComponentRevisionName != "web-v1" {
		t.Errorf("workloads = %+v, want web at web-v1", app.Status.Workloads)
	}

	// cluster2 leaves the placement: its ManifestWork goes, and so do its objects on cluster2.
	uid1, _ := f.waitShopOn("cluster1", "nginx:2")
	f.labelCluster("cluster2", key, "dev")
	f.waitWorkGone("cluster2", "shop")
	f.waitShopGone("cluster2")
	f.waitDelivered("shop", "cluster1")
	if uid, _ := f.waitShopOn("cluster1", "nginx:2"); uid != uid1 {
		t.Errorf("the Deployment on cluster1 was re-created when cluster2 left")
	}

	// cluster2 joins and cluster1 leaves: the application moves.
	f.labelCluster("cluster2", key, "prod")
	f.labelCluster("cluster1", key, "dev")
	f.waitShopOn("cluster2", "nginx:2")
	f.waitWorkGone("cluster1", "shop")
	f.waitShopGone("cluster1")
	f.waitDelivered("shop", "cluster2")

	// Deleting the AppConfig deletes its ManifestWorks, then the AppConfig goes; the agents remove
	// the objects.
	f.deleteApp("shop")
	f.waitShopGone("cluster2")
}

// The status side of delivery: the AppConfig counts both clusters applied and available within seconds of
// the agents reporting on their ManifestWorks, and lists a cluster only while it is not fine.
func TestAppConfigStatusFollowsTheAgentsReportsWithinSeconds(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	f.waitLatest("web", "web-v1")
	f.createApp(f.appConfig("shop", onClusters(clusters...), shopEntry()))

	// Poll the works and the AppConfig together: when did the last work show Applied and Available,
	// and when did the AppConfig count both clusters so?
	var worksSeen, appSeen, transition time.Time
	var last *v1alpha2.ApplicationConfiguration
	var lastWorks []workv1.ManifestWork
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if worksSeen.IsZero() {
			applied := 0
			for _, c := range clusters {
				if mw, err := f.work(ctx, c, "shop"); err == nil && workApplied(mw) {
					applied++
					for _, typ := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
						if lt := findCondition(mw.Status.Conditions, typ).LastTransitionTime.Time; lt.After(transition) {
							transition = lt
						}
					}
				}
			}
			if applied == len(clusters) {
				worksSeen = time.Now()
			}
		}
		app, err := f.app(ctx, "shop")
		if err != nil {
			return false, nil
		}
		last = app
		if s := app.Status.Summary; appSeen.IsZero() && isReady(app) && s != nil && s.Applied == "2/2" && s.Available == "2/2" {
			appSeen = time.Now()
		}
		return !worksSeen.IsZero() && !appSeen.IsZero(), nil
	})
	if err != nil {
		t.Fatalf("works applied at %v, AppConfig counting them at %v: %v; AppConfig status: %+v", worksSeen, appSeen, err, last.Status)
	}
	const bound = 5 * time.Second
	delay := max(0, appSeen.Sub(worksSeen))
	// lastTransitionTime is truncated to the second: this overestimates the delay by up to 1s.
	sinceTransition := appSeen.Sub(transition)
	t.Logf("the AppConfig counted the agents' reports %v after the works showed them, at most %v after the agents reported them (lastTransitionTime)", delay, sinceTransition)
	if delay > bound || sinceTransition > bound {
		t.Errorf("the AppConfig counted the agents' reports %v after the works showed them, %v after their lastTransitionTime; want below %v", delay, sinceTransition, bound)
	}
	// Once the Deployments are ready the clusters are fine, and the status lists neither.
	f.waitDelivered("shop", clusters...)
	f.eventually("no cluster listed once both are healthy", func(ctx context.Context) (bool, error) {
		app, err := f.app(ctx, "shop")
		if err != nil {
			return false, err
		}
		lastWorks, err = f.works(ctx, "shop")
		return err == nil && app.Status.Summary.Healthy == "2/2" && len(app.Status.Clusters) == 0 && app.Status.OmittedClusters == 0, err
	})
	for _, w := range statusview.ForAppConfig(last, lastWorks).Clusters {
		if !showsShop(w, f.ns) {
			t.Errorf("%s: kubectl ferry shows %+v, want the Deployment web and the trait web-scalertrait applied and available", w.Cluster, w.Manifests)
		}
	}
}

// showsShop reports whether a cluster's work, as `kubectl ferry` shows it, has the Deployment web and
// the ScalerTrait web-scalertrait Applied and Available.
func showsShop(w statusview.Work, ns string) bool {
	if w.Applied != metav1.ConditionTrue || w.Available != metav1.ConditionTrue || w.Name != ns+".shop" || len(w.Manifests) != 2 {
		return false
	}
	for i, want := range []statusview.Manifest{
		{Group: "apps", Version: "v1", Kind: "Deployment", Name: "web", Namespace: ns},
		{Group: scalerTraitGVK.Group, Version: scalerTraitGVK.Version, Kind: scalerTraitGVK.Kind, Name: "web-scalertrait", Namespace: ns},
	} {
		m := w.Manifests[i]
		if m.Group != want.Group || m.Version != want.Version || m.Kind != want.Kind || m.Name != want.Name || m.Namespace != want.Namespace ||
			m.Applied != metav1.ConditionTrue || m.Available != metav1.ConditionTrue {
			return false
		}
	}
	return true
}

// badEntries are component entries that cannot be rendered, with the reason of the Ready condition
// they get and a word its message must say.
var badEntries = []struct {
	name, reason, says string
	entry              v1alpha2.ApplicationConfigurationComponent
}{
	{"missing-component", "ComponentNotFound", "nope", v1alpha2.ApplicationConfigurationComponent{ComponentName: "nope"}},
	{"unknown-parameter", "UnknownParameter", "colour", v1alpha2.ApplicationConfigurationComponent{ComponentName: "web",
		ParameterValues: []v1alpha2.ComponentParameterValue{param("colour", `"red"`)}}},
	{"missing-trait-definition", "TraitDefinitionNotFound", "Mystery", v1alpha2.ApplicationConfigurationComponent{ComponentName: "web",
		Traits: []v1alpha2.ComponentTrait{{Trait: runtime.RawExtension{Raw: []byte(`{"apiVersion":"example.com/v1","kind":"Mystery","spec":{}}`)}}}}},
}

// Bad input: a clear condition on the AppConfig, and nothing delivered.
func TestAppConfigThatCannotBeRenderedDeliversNothing(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	f.waitLatest("web", "web-v1")
	for _, bad := range badEntries {
		f.createApp(f.appConfig(bad.name, onClusters(clusters...), bad.entry))
	}
	for _, bad := range badEntries {
		app := f.waitApp(bad.name, "Ready=False, reason "+bad.reason, notReadyBecause(bad.reason))
		if msg := ready(app).Message; !strings.Contains(msg, bad.says) {
			t.Errorf("%s: Ready message %q does not name %q", bad.name, msg, bad.says)
		}
	}
	f.consistently("no ManifestWork and nothing on the spokes", 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		works := &workv1.ManifestWorkList{}
		if err := f.hub.List(ctx, works, client.MatchingLabels{hub.LabelAppConfigNamespace: f.ns}); err != nil {
			return false, err
		}
		if len(works.Items) != 0 {
			return false, fmt.Errorf("%d ManifestWorks delivered for AppConfigs that cannot be rendered", len(works.Items))
		}
		for _, c := range clusters {
			deployments := &appsv1.DeploymentList{}
			if err := f.spokes[c].List(ctx, deployments, client.InNamespace(f.ns)); err != nil {
				return false, err
			}
			if len(deployments.Items) != 0 {
				return false, fmt.Errorf("%d Deployments on %s", len(deployments.Items), c)
			}
		}
		return true, nil
	})
}

// An AppConfig that was delivered and is then edited into bad input says so, and keeps what it
// delivered: its ManifestWorks stay as they were and its objects stay on the spokes, untouched. Fixed,
// it is delivered again.
func TestAppConfigEditedIntoBadInputKeepsWhatWasDelivered(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	f.waitLatest("web", "web-v1")
	f.createApp(f.appConfig("shop", onClusters(clusters...), shopEntry()))
	f.waitDelivered("shop", clusters...)
	type delivered struct {
		workGen        int64
		deployment, tr types.UID
	}
	before := map[string]delivered{}
	for _, c := range clusters {
		d, tr := f.waitShopOn(c, "nginx:2")
		mw, err := f.work(t.Context(), c, "shop")
		if err != nil {
			t.Fatal(err)
		}
		before[c] = delivered{mw.Generation, d, tr}
	}

	for _, bad := range badEntries {
		f.updateApp("shop", func(app *v1alpha2.ApplicationConfiguration) {
			app.Spec.Components = []v1alpha2.ApplicationConfigurationComponent{bad.entry}
		})
		app := f.waitApp("shop", bad.name+": Ready=False, reason "+bad.reason, notReadyBecause(bad.reason))
		if s := app.Status.Summary; s == nil || s.Clusters != int32(len(clusters)) || s.Applied != "2/2" {
			t.Errorf("%s: summary %+v, want the clusters still delivered to counted, 2/2 applied", bad.name, s)
		}
		f.consistently(bad.name+": ManifestWorks and spoke objects untouched", time.Second, func(ctx context.Context) (bool, error) {
			for _, c := range clusters {
				mw, err := f.work(ctx, c, "shop")
				if err != nil || mw.DeletionTimestamp != nil || mw.Generation != before[c].workGen {
					return false, fmt.Errorf("ManifestWork on %s changed: %v (error %v)", c, mw.ObjectMeta, err)
				}
				d, err := f.deployment(ctx, c, "web")
				if err != nil || d.UID != before[c].deployment || d.DeletionTimestamp != nil || image(d) != "nginx:2" {
					return false, fmt.Errorf("Deployment web on %s changed: image %s, deleting %v (error %v)", c, image(d), d.DeletionTimestamp != nil, err)
				}
				tr, err := f.spokeObject(ctx, c, scalerTraitGVK, "web-scalertrait")
				if err != nil || tr.GetUID() != before[c].tr || tr.GetDeletionTimestamp() != nil {
					return false, fmt.Errorf("trait on %s changed (error %v)", c, err)
				}
			}
			return true, nil
		})
	}

	// Fixed (with a new image), it is delivered again: the same objects, updated.
	f.updateApp("shop", func(app *v1alpha2.ApplicationConfiguration) {
		entry := shopEntry()
		entry.ParameterValues = []v1alpha2.ComponentParameterValue{param("image", `"nginx:3"`)}
		app.Spec.Components = []v1alpha2.ApplicationConfigurationComponent{entry}
	})
	f.waitDelivered("shop", clusters...)
	for _, c := range clusters {
		if d, _ := f.waitShopOn(c, "nginx:3"); d != before[c].deployment {
			t.Errorf("the Deployment on %s was re-created, not updated", c)
		}
	}
}

// appConfigReconciles is how many reconciles the AppConfig controllers of this process have finished.
func appConfigReconciles(t *testing.T) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, mf := range families {
		if mf.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "appconfigs" {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// Steady state costs the hub nothing: once an application is delivered and its status folded back,
// reconciling it again (an unrelated edit of the AppConfig, of its Component, of a cluster) writes
// nothing — no ManifestWork, no status, no event.
func TestDeliveredAppConfigReconciledAgainWritesNothing(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	f.createApp(f.appConfig("shop", onClusters(clusters...), shopEntry()))
	f.waitApp("shop", "applied and available on both clusters", func(app *v1alpha2.ApplicationConfiguration) bool {
		return isReady(app) && app.Status.Summary != nil && app.Status.Summary.Applied == "2/2" && app.Status.Summary.Available == "2/2"
	})
	// The agents' last status reports reach the hub; then the hub goes quiet.
	f.eventually("the hub controllers stop writing", func(ctx context.Context) (bool, error) {
		before := f.hubWrites.Load()
		reconciles := appConfigReconciles(t)
		f.consistently("quiet", time.Second, func(context.Context) (bool, error) { return true, nil })
		return f.hubWrites.Load() == before && appConfigReconciles(t) == reconciles, nil
	})

	writes, reconciles := f.hubWrites.Load(), appConfigReconciles(t)
	touch := func(obj client.Object) {
		f.eventually("touch "+obj.GetName(), func(ctx context.Context) (bool, error) {
			if err := f.hub.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return false, err
			}
			labels := obj.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			labels["ferry.io/touched"] = strconv.Itoa(len(labels))
			obj.SetLabels(labels)
			return true, f.hub.Update(ctx, obj)
		})
	}
	touch(&v1alpha2.ApplicationConfiguration{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "shop"}})
	touch(&v1alpha2.Component{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "web"}})
	f.eventually("the AppConfig reconciled again", func(context.Context) (bool, error) {
		return appConfigReconciles(t) >= reconciles+2, nil
	})
	if n := f.hubWrites.Load() - writes; n != 0 {
		t.Errorf("reconciling an unchanged, delivered AppConfig wrote %d times to the hub; want 0", n)
	}
}

// Manifests too large for a ManifestWork (over OCM's 500 KiB, which its work webhook refuses) are
// reported on the AppConfig, naming the largest component and what to do, and what was delivered before
// stays as it was.
func TestManifestWorkTooLargeIsReportedAndWhatWasDeliveredStays(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	blob := strings.Repeat("x", 300*1024)
	for _, name := range []string{"big-a", "big-b"} {
		f.mustCreate(f.hub, &v1alpha2.Component{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
			Spec: v1alpha2.ComponentSpec{Workload: runtime.RawExtension{Raw: []byte(
				`{"apiVersion":"v1","kind":"ConfigMap","data":{"blob":"` + blob + `"}}`)}},
		})
	}
	// Server-side apply: a last-applied record of this size would not fit in an annotation.
	entry := func(name string) v1alpha2.ApplicationConfigurationComponent {
		return v1alpha2.ApplicationConfigurationComponent{ComponentName: name, UpdateStrategy: "ServerSideApply"}
	}
	f.createApp(f.appConfig("big", onClusters(clusters...), entry("big-a")))
	f.waitApp("big", "delivered", func(app *v1alpha2.ApplicationConfiguration) bool {
		return isReady(app) && app.Status.Summary != nil && app.Status.Summary.Applied == "2/2"
	})
	generations := map[string]int64{}
	for _, c := range clusters {
		mw, err := f.work(t.Context(), c, "big")
		if err != nil {
			t.Fatal(err)
		}
		generations[c] = mw.Generation
	}

	// Each component alone fits in a ManifestWork; both (300 KiB twice) do not.
	f.updateApp("big", func(app *v1alpha2.ApplicationConfiguration) {
		app.Spec.Components = append(app.Spec.Components, entry("big-b"))
	})
	app := f.waitApp("big", "ManifestsTooLarge", notReadyBecause("ManifestsTooLarge"))
	for _, says := range []string{`component "big-a"`, "600 KiB", "500 KiB", "split the application"} {
		if !strings.Contains(ready(app).Message, says) {
			t.Errorf("Ready message %q does not say %q", ready(app).Message, says)
		}
	}
	f.consistently("what was delivered stays", time.Second, func(ctx context.Context) (bool, error) {
		for _, c := range clusters {
			mw, err := f.work(ctx, c, "big")
			if err != nil || mw.Generation != generations[c] {
				return false, err
			}
			cm := &corev1.ConfigMap{}
			if err := f.spokes[c].Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "big-a"}, cm); err != nil || len(cm.Data["blob"]) != len(blob) {
				return false, err
			}
		}
		return true, nil
	})
}

// A ManifestWork someone deletes on the hub moments after the hub created it is put back at once: the
// hub's memory of its own recent writes (which keeps it from writing a work again while its cache lags)
// takes the deletion for what it is, not for a cache that has yet to show the new work.
func TestAWorkDeletedRightAfterItsCreationIsPutBackAtOnce(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	f.createApp(f.appConfig("shop", onClusters("cluster1"), shopEntry()))
	created := f.waitWork("cluster1", "shop", "created", func(*workv1.ManifestWork) bool { return true })
	if err := f.hub.Delete(t.Context(), created); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	// Well inside the 30 s the hub trusts its own writes over its cache: at once, not when they expire.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		back, err := f.work(ctx, "cluster1", "shop")
		return err == nil && back.UID != created.UID, nil
	}); err != nil {
		t.Fatalf("the ManifestWork deleted %s after its creation was not put back within 10s", time.Since(created.CreationTimestamp.Time).Round(time.Second))
	}
	t.Logf("put back %s after its deletion", time.Since(deleted).Round(time.Millisecond))
	f.waitDelivered("shop", "cluster1")
}
