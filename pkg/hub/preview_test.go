package hub_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
	"github.com/ferry-mc/ferry/pkg/render"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// preview reads the preview ManifestWork of an AppConfig of the test's namespace on a cluster.
func (f *fixture) preview(ctx context.Context, cluster, app string) (*workv1.ManifestWork, error) {
	mw := &workv1.ManifestWork{}
	err := f.hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: v1alpha2.PreviewWorkName(f.ns, app)}, mw)
	return mw, err
}

// waitPreview polls the preview of app on cluster until check passes on it, and returns it.
func (f *fixture) waitPreview(cluster, app, what string, check func(*workv1.ManifestWork) bool) *workv1.ManifestWork {
	f.t.Helper()
	var last *workv1.ManifestWork
	f.eventually(fmt.Sprintf("preview of %s on %s: %s", app, cluster, what), func(ctx context.Context) (bool, error) {
		mw, err := f.preview(ctx, cluster, app)
		if err != nil {
			return false, client.IgnoreNotFound(err)
		}
		last = mw
		return check(mw), nil
	})
	return last
}

// reportDiff writes the status of the preview of app on cluster as ferry-agent reports on a work
// annotated ferry.io/report-diff, for the preview's generation: each manifest's WouldChange condition,
// from diffs by object name (those not named match the live object), and the work's own.
func (f *fixture) reportDiff(cluster, app string, diffs map[string]workreport.Diff) {
	f.t.Helper()
	f.eventually("report the diff of the preview of "+app+" on "+cluster, func(ctx context.Context) (bool, error) {
		mw, err := f.preview(ctx, cluster, app)
		if err != nil {
			return false, err
		}
		now := metav1.Now()
		mw.Status = workv1.ManifestWorkStatus{}
		changing := 0
		for i, m := range mw.Spec.Workload.Manifests {
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(m.Raw); err != nil {
				return false, err
			}
			gvk := obj.GroupVersionKind()
			d := diffs[obj.GetName()]
			changing += countTrue(d.Changes())
			c := workreport.DiffCondition(d)
			c.ObservedGeneration, c.LastTransitionTime = mw.Generation, now
			mw.Status.ResourceStatus.Manifests = append(mw.Status.ResourceStatus.Manifests, workv1.ManifestCondition{
				ResourceMeta: workv1.ManifestResourceMeta{Ordinal: int32(i), Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind,
					Resource: strings.ToLower(gvk.Kind) + "s", Name: obj.GetName(), Namespace: obj.GetNamespace()},
				Conditions: []metav1.Condition{c}})
		}
		c := workreport.WorkDiffCondition(changing, len(mw.Spec.Workload.Manifests))
		c.ObservedGeneration, c.LastTransitionTime = mw.Generation, now
		mw.Status.Conditions = []metav1.Condition{c}
		return true, f.hub.Status().Update(ctx, mw)
	})
}

func countTrue(b bool) int {
	if b {
		return 1
	}
	return 0
}

// imageIn is the image of the Deployment among a work's manifests.
func imageIn(t testing.TB, mw *workv1.ManifestWork) string {
	t.Helper()
	for _, m := range mw.Spec.Workload.Manifests {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(m.Raw); err != nil {
			t.Fatal(err)
		}
		if obj.GetKind() == "Deployment" {
			containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
			if len(containers) > 0 {
				image, _ := containers[0].(map[string]any)["image"].(string)
				return image
			}
		}
	}
	return ""
}

// An AppConfig annotated ferry.io/report-only is delivered nothing: an image changed meanwhile leaves the
// works on both clusters as they were (resourceVersion and spec), and each cluster gets a preview of the
// work it would get — every manifest ReadOnly, annotated ferry.io/report-diff, labelled as the
// AppConfig's preview and not as its work (status.summary still counts the two works). What the agents
// report on the previews is folded into status.diff and the Previewed condition; reconciling again
// writes no preview and nothing else; a cluster leaving the placement loses its preview and keeps its
// work. Removing the annotation deletes the previews and delivers the new image.
func TestReportOnlyAppConfigIsPreviewedAndNotDelivered(t *testing.T) {
	f := setup(t)
	changed, same := "changed-"+f.ns, "same-"+f.ns
	f.addManagedCluster(changed, nil)
	f.addManagedCluster(same, nil)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	f.waitLatest("web", "web-v1")
	withImage := func(image string) v1alpha2.ApplicationConfigurationComponent {
		return v1alpha2.ApplicationConfigurationComponent{ComponentName: "web", ParameterValues: []v1alpha2.ComponentParameterValue{param("image", strconv.Quote(image))}}
	}
	f.createApp(f.appConfig("shop", onClusters(changed, same), withImage("nginx:1")))
	delivered := map[string]*workv1.ManifestWork{}
	for _, c := range []string{changed, same} {
		delivered[c] = f.waitWork(c, "shop", "delivered with nginx:1", func(mw *workv1.ManifestWork) bool { return imageIn(t, mw) == "nginx:1" })
	}
	unchanged := func(ctx context.Context) (bool, error) {
		for c, before := range delivered {
			mw, err := f.work(ctx, c, "shop")
			if err != nil {
				return false, err
			}
			if mw.ResourceVersion != before.ResourceVersion || !equality.Semantic.DeepEqual(mw.Spec, before.Spec) {
				return false, fmt.Errorf("the work on %s was written (resourceVersion %s, was %s; image %s)", c, mw.ResourceVersion, before.ResourceVersion, imageIn(t, mw))
			}
		}
		return true, nil
	}

	f.updateApp("shop", func(a *v1alpha2.ApplicationConfiguration) {
		metav1.SetMetaDataAnnotation(&a.ObjectMeta, v1alpha2.AnnotationReportOnly, "true")
	})
	f.updateApp("shop", func(a *v1alpha2.ApplicationConfiguration) { a.Spec.Components[0] = withImage("nginx:2") })
	previews := map[string]*workv1.ManifestWork{}
	for _, c := range []string{changed, same} {
		previews[c] = f.waitPreview(c, "shop", "previews nginx:2", func(mw *workv1.ManifestWork) bool { return imageIn(t, mw) == "nginx:2" })
		mw := previews[c]
		if mw.Annotations[workreport.AnnotationReportDiff] != "true" || mw.Labels[hub.LabelPreviewOfNamespace] != f.ns || mw.Labels[hub.LabelPreviewOfName] != "shop" ||
			mw.Labels[hub.LabelAppConfigName] != "" || mw.Labels[hub.LabelAppConfigNamespace] != "" {
			t.Errorf("preview on %s: annotations %v, labels %v; want ferry.io/report-diff and the preview-of labels, not the work's", c, mw.Annotations, mw.Labels)
		}
		if len(mw.Spec.ManifestConfigs) != len(mw.Spec.Workload.Manifests) || mw.Spec.DeleteOption != nil {
			t.Errorf("preview on %s: %d manifestConfigs for %d manifests, deleteOption %v", c, len(mw.Spec.ManifestConfigs), len(mw.Spec.Workload.Manifests), mw.Spec.DeleteOption)
		}
		for _, mc := range mw.Spec.ManifestConfigs {
			if mc.UpdateStrategy == nil || mc.UpdateStrategy.Type != workv1.UpdateStrategyTypeReadOnly || len(mc.FeedbackRules) > 0 {
				t.Errorf("preview on %s: manifestConfig %+v, want ReadOnly and nothing else", c, mc)
			}
		}
	}
	app := f.waitApp("shop", "report only, waiting for both clusters' reports", func(a *v1alpha2.ApplicationConfiguration) bool {
		c := meta.FindStatusCondition(a.Status.Conditions, v1alpha2.ConditionPreviewed)
		return a.Status.Diff != nil && a.Status.Diff.Generation == a.Generation && c != nil && c.Reason == v1alpha2.ReasonWaitingForReports
	})
	if r := ready(app); r == nil || r.Status != metav1.ConditionFalse || r.Reason != v1alpha2.ReasonReportOnly {
		t.Errorf("Ready %+v while report only, want False, ReportOnly", r)
	}
	if d := app.Status.Diff; d.Clusters != 2 || d.Reported != 0 || strings.Join(d.Pending, ",") != strings.Join([]string{changed, same}, ",") {
		t.Errorf("status.diff %s before any report, want 2 clusters, both pending", asJSON(d))
	}
	if s := app.Status.Summary; s == nil || s.Clusters != 2 {
		t.Errorf("status.summary %s: want the two works counted, not the previews", asJSON(s))
	}
	if ok, err := unchanged(t.Context()); !ok {
		t.Fatal(err)
	}
	// Events say previews, not deliveries, and report only is no warning: it was asked for.
	f.eventually("Normal events PreviewCreated and ReportOnly on the AppConfig", func(ctx context.Context) (bool, error) {
		events := &eventsv1.EventList{}
		if err := f.hub.List(ctx, events, client.InNamespace(f.ns)); err != nil {
			return false, err
		}
		seen := map[string]bool{}
		for _, e := range events.Items {
			if e.Regarding.Name == "shop" && e.Type == corev1.EventTypeNormal &&
				(e.Reason == "PreviewCreated" && strings.Contains(e.Note, changed) && strings.Contains(e.Note, same) || e.Reason == v1alpha2.ReasonReportOnly) {
				seen[e.Reason] = true
			}
		}
		return len(seen) == 2, nil
	})

	imageDiff := workreport.Diff{Fields: []workreport.FieldChange{{Path: ".spec.template.spec.containers[0].image", Live: `"nginx:1"`, Want: `"nginx:2"`}}}
	f.reportDiff(changed, "shop", map[string]workreport.Diff{"web": imageDiff})
	f.reportDiff(same, "shop", nil)
	app = f.waitApp("shop", "previewed on both clusters", func(a *v1alpha2.ApplicationConfiguration) bool {
		return meta.IsStatusConditionTrue(a.Status.Conditions, v1alpha2.ConditionPreviewed)
	})
	want := &v1alpha2.DiffStatus{Generation: app.Generation, Clusters: 2, Reported: 2, Changing: 1, Objects: 1, Changes: []v1alpha2.ObjectDiff{{
		Cluster: changed, Kind: "Deployment", Namespace: f.ns, Name: "web",
		Fields: []v1alpha2.FieldDiff{{Path: ".spec.template.spec.containers[0].image", Live: `"nginx:1"`, Want: `"nginx:2"`}}}}}
	if !equality.Semantic.DeepEqual(app.Status.Diff, want) {
		t.Errorf("status.diff %s, want %s", asJSON(app.Status.Diff), asJSON(want))
	}
	c := meta.FindStatusCondition(app.Status.Conditions, v1alpha2.ConditionPreviewed)
	if c.Reason != v1alpha2.ReasonWouldChange || c.Message != "1 object would change on 1 of 2 clusters" {
		t.Errorf("Previewed %s: %s, want WouldChange: 1 object would change on 1 of 2 clusters", c.Reason, c.Message)
	}
	if r := ready(app); r.Reason != v1alpha2.ReasonReportOnly || !strings.Contains(r.Message, "1 object would change on 1 of 2 clusters") {
		t.Errorf("Ready %s: %s, want it to say report only and what would change", r.Reason, r.Message)
	}

	t.Run("reconciled again, it writes nothing", func(t *testing.T) {
		f.eventually("the hub controllers stop writing", func(ctx context.Context) (bool, error) {
			before, reconciles := f.hubWrites.Load(), appConfigReconciles(t)
			f.consistently("quiet", time.Second, func(context.Context) (bool, error) { return true, nil })
			return f.hubWrites.Load() == before && appConfigReconciles(t) == reconciles, nil
		})
		writes, reconciles := f.hubWrites.Load(), appConfigReconciles(t)
		versions := map[string]string{}
		for c := range previews {
			mw, err := f.preview(t.Context(), c, "shop")
			if err != nil {
				t.Fatal(err)
			}
			versions[c] = mw.ResourceVersion
		}
		f.updateApp("shop", func(a *v1alpha2.ApplicationConfiguration) {
			metav1.SetMetaDataAnnotation(&a.ObjectMeta, "example.com/touched", "1")
		})
		f.eventually("the AppConfig reconciled again", func(context.Context) (bool, error) { return appConfigReconciles(t) > reconciles, nil })
		if n := f.hubWrites.Load() - writes; n != 0 {
			t.Errorf("reconciling a report-only AppConfig whose previews are up to date wrote %d times to the hub; want 0", n)
		}
		for c, v := range versions {
			if mw, err := f.preview(t.Context(), c, "shop"); err != nil || mw.ResourceVersion != v {
				t.Errorf("preview on %s rewritten (resourceVersion %s, was %s; %v)", c, mw.ResourceVersion, v, err)
			}
		}
	})

	t.Run("a cluster leaving the placement loses its preview and keeps its work", func(t *testing.T) {
		f.updateApp("shop", func(a *v1alpha2.ApplicationConfiguration) { a.Spec.Placement = onClusters(changed) })
		f.eventually("the preview on "+same+" deleted", func(ctx context.Context) (bool, error) {
			_, err := f.preview(ctx, same, "shop")
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
		f.waitApp("shop", "one cluster previewed", func(a *v1alpha2.ApplicationConfiguration) bool {
			return a.Status.Diff != nil && a.Status.Diff.Clusters == 1 && a.Status.Diff.Generation == a.Generation
		})
		if ok, err := unchanged(t.Context()); !ok {
			t.Fatal(err)
		}
		f.updateApp("shop", func(a *v1alpha2.ApplicationConfiguration) { a.Spec.Placement = onClusters(changed, same) })
		f.waitPreview(same, "shop", "back", func(*workv1.ManifestWork) bool { return true })
	})

	f.updateApp("shop", func(a *v1alpha2.ApplicationConfiguration) { delete(a.Annotations, v1alpha2.AnnotationReportOnly) })
	for _, c := range []string{changed, same} {
		f.eventually("the preview on "+c+" deleted", func(ctx context.Context) (bool, error) {
			_, err := f.preview(ctx, c, "shop")
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
		f.waitWork(c, "shop", "delivered with nginx:2", func(mw *workv1.ManifestWork) bool { return imageIn(t, mw) == "nginx:2" })
	}
	f.waitApp("shop", "delivered, with neither diff nor Previewed", func(a *v1alpha2.ApplicationConfiguration) bool {
		r := ready(a)
		return a.Status.Diff == nil && meta.FindStatusCondition(a.Status.Conditions, v1alpha2.ConditionPreviewed) == nil &&
			r != nil && r.Reason == "Delivered" && r.ObservedGeneration == a.Generation
	})
}

// A ManifestWork of a preview's name that Ferry did not write for the AppConfig is neither adopted nor
// overwritten: that cluster's preview is refused, said so on Ready, and written once the work is gone.
func TestReportOnlyAppConfigLeavesAForeignWorkOfItsPreviewName(t *testing.T) {
	f := setup(t)
	cluster := "foreign-" + f.ns
	f.addManagedCluster(cluster, nil)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	f.waitLatest("web", "web-v1")
	foreign := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: v1alpha2.PreviewWorkName(f.ns, "shop")},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"theirs","namespace":"default"}}`)}}}}}}
	f.mustCreate(f.hub, foreign)
	app := f.appConfig("shop", onClusters(cluster), v1alpha2.ApplicationConfigurationComponent{ComponentName: "web"})
	app.Annotations = map[string]string{v1alpha2.AnnotationReportOnly: "true"}
	f.createApp(app)
	f.waitApp("shop", "the preview refused", func(a *v1alpha2.ApplicationConfiguration) bool {
		r := ready(a)
		return r != nil && r.Reason == v1alpha2.ReasonReportOnly && strings.Contains(r.Message, "Ferry did not create it for this AppConfig")
	})
	if mw, err := f.preview(t.Context(), cluster, "shop"); err != nil || mw.ResourceVersion != foreign.ResourceVersion {
		t.Fatalf("the foreign work was written (resourceVersion %s, was %s; %v)", mw.ResourceVersion, foreign.ResourceVersion, err)
	}
	if err := f.hub.Delete(t.Context(), foreign); err != nil {
		t.Fatal(err)
	}
	f.waitPreview(cluster, "shop", "written once the foreign work is gone", func(mw *workv1.ManifestWork) bool {
		return mw.Labels[hub.LabelPreviewOfName] == "shop" && imageIn(t, mw) == "nginx:1"
	})
	if works, err := f.works(t.Context(), "shop"); err != nil || len(works) != 0 {
		t.Errorf("works of a report-only AppConfig: %d (%v), want none", len(works), err)
	}
}

// A report-only AppConfig is previewed where it may be delivered and nowhere else: a cluster of no
// ManagedClusterSet bound to its namespace gets no preview, though its placement names every cluster
// (an agent reads with its rights what a preview names, and reports what it finds).
func TestReportOnlyAppConfigIsPreviewedOnlyOnBoundClusters(t *testing.T) {
	f := setup(t)
	f.unbind(localcluster.GlobalClusterSet)
	f.startHub(hubOptions(render.ApplyOnceOff))
	key, labelled := "ferry.io/test-"+f.ns, "labelled-"+f.ns
	f.labelCluster("cluster1", key, "a")
	f.clusterSet(labelled, &metav1.LabelSelector{MatchLabels: map[string]string{key: "a"}})
	f.bind(labelled)
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	app := f.appConfig("peek", &v1alpha2.Placement{ClusterSelector: &metav1.LabelSelector{}}, v1alpha2.ApplicationConfigurationComponent{ComponentName: "web"})
	metav1.SetMetaDataAnnotation(&app.ObjectMeta, v1alpha2.AnnotationReportOnly, "true")
	f.createApp(app)
	name := v1alpha2.PreviewWorkName(f.ns, "peek")
	previewed := func(ctx context.Context, cluster string) (bool, error) {
		err := f.hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: name}, &workv1.ManifestWork{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
	f.eventually("a preview on cluster1", func(ctx context.Context) (bool, error) { return previewed(ctx, "cluster1") })
	f.waitApp("peek", "cluster2 refused", func(app *v1alpha2.ApplicationConfiguration) bool {
		return placedAs(app, []string{"cluster1"}, []string{"cluster2"}, v1alpha2.ReasonClustersNotBound)
	})
	f.consistently("no preview on cluster2", time.Second, func(ctx context.Context) (bool, error) {
		on, err := previewed(ctx, "cluster2")
		return !on, err
	})
}
