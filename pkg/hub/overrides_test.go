package hub_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
	"github.com/ferry-mc/ferry/pkg/render"
)

var configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// One AppConfig, three clusters in two regions: each region's clusters run the image from their
// region's registry, a cluster's ClusterClaim reaches its ConfigMap, and an override that breaks one
// cluster's render is a condition naming it, that cluster getting nothing and the others theirs. A
// change of a cluster's own facts renders that cluster again at once, at the same revision, and
// rewrites no other cluster's work.
func TestOverridesGiveEachClusterItsOwnRender(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	region := "example.com/region-" + f.ns
	f.labelCluster("cluster1", region, "eu")
	f.labelCluster("cluster2", region, "us")
	eu2 := "eu-2-" + f.ns // a cluster with no agent: what it gets is its ManifestWork
	f.addManagedCluster(eu2, map[string]string{region: "eu"})
	f.setClaim("cluster2", "id.k8s.io", "c2-4f2a")

	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"), f.settingsComponent("settings", "nginx:1"))
	app := f.appConfig("shop", onClusters("cluster1", "cluster2", eu2),
		v1alpha2.ApplicationConfigurationComponent{ComponentName: "web"}, v1alpha2.ApplicationConfigurationComponent{ComponentName: "settings"})
	app.Spec.Overrides = []v1alpha2.Override{
		{Name: "regional-registry", ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: region, Operator: metav1.LabelSelectorOpExists}}},
			Image: &v1alpha2.ImageOverride{Component: "web", Registry: "registry.${cluster.labels[" + region + "]}.example.com"}},
		{Name: "cluster-id", Clusters: []string{"cluster2"}, Patches: []v1alpha2.ObjectPatch{{Target: v1alpha2.ObjectTarget{Kind: "ConfigMap", Name: "settings"},
			JSONPatch: []v1alpha2.JSONPatchOperation{{Op: "add", Path: "/data/cluster-id", Value: &runtime.RawExtension{Raw: []byte(`"${cluster.claims[id.k8s.io]}"`)}}}}}},
		{Name: "paused", Clusters: []string{eu2}, Patches: []v1alpha2.ObjectPatch{{Target: v1alpha2.ObjectTarget{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			JSONPatch: []v1alpha2.JSONPatchOperation{{Op: "replace", Path: "/spec/paused", Value: &runtime.RawExtension{Raw: []byte(`true`)}}}}}},
	}
	f.createApp(app)

	f.waitImage("cluster1", "web", "registry.eu.example.com/library/nginx:1")
	f.waitImage("cluster2", "web", "registry.us.example.com/library/nginx:1")
	f.waitSpokeObject("cluster2", configMapGVK, "settings", "the cluster's id claim in its data", func(u *unstructured.Unstructured) bool {
		v, _, _ := unstructured.NestedString(u.Object, "data", "cluster-id")
		return v == "c2-4f2a"
	})
	cm, err := f.spokeObject(t.Context(), "cluster1", configMapGVK, "settings")
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedString(cm.Object, "data", "cluster-id"); found {
		t.Errorf("cluster1's ConfigMap has the cluster-id only cluster2's override sets: %v", cm.Object["data"])
	}
	got := f.waitApp("shop", "not ready for the override that cannot apply on "+eu2, notReadyBecause("OverrideFailed"))
	for _, want := range []string{"delivered to 2 of 3 clusters", "override paused for cluster " + eu2 + " on Deployment web", "/spec/paused"} {
		if msg := ready(got).Message; !strings.Contains(msg, want) {
			t.Errorf("Ready says %q; want it to say %q", msg, want)
		}
	}
	if _, err := f.work(t.Context(), eu2, "shop"); err == nil {
		t.Errorf("%s got a ManifestWork its override breaks", eu2)
	}

	// One revision, rendered for each cluster.
	w1, err := f.work(t.Context(), "cluster1", "shop")
	if err != nil {
		t.Fatal(err)
	}
	w2, err := f.work(t.Context(), "cluster2", "shop")
	if err != nil {
		t.Fatal(err)
	}
	rev := v1alpha2.WorkRevision(w1.Annotations)
	if rev == "" || v1alpha2.WorkRevision(w2.Annotations) != rev || w1.Annotations[hub.AnnotationSpecHash] == w2.Annotations[hub.AnnotationSpecHash] {
		t.Errorf("works: cluster1 revision %s spec %s, cluster2 revision %s spec %s; want one revision and two specs",
			rev, w1.Annotations[hub.AnnotationSpecHash], v1alpha2.WorkRevision(w2.Annotations), w2.Annotations[hub.AnnotationSpecHash])
	}

	// cluster2's claim changes: its work follows at the same revision; cluster1's is not written.
	f.setClaim("cluster2", "id.k8s.io", "c2-77b0")
	f.waitSpokeObject("cluster2", configMapGVK, "settings", "the changed claim in its data", func(u *unstructured.Unstructured) bool {
		v, _, _ := unstructured.NestedString(u.Object, "data", "cluster-id")
		return v == "c2-77b0"
	})
	after2 := f.waitWork("cluster2", "shop", "rendered again", func(mw *workv1.ManifestWork) bool {
		return mw.Annotations[hub.AnnotationSpecHash] != w2.Annotations[hub.AnnotationSpecHash]
	})
	if v1alpha2.WorkRevision(after2.Annotations) != rev {
		t.Errorf("cluster2's work moved to revision %s for a change of its own facts; want %s", v1alpha2.WorkRevision(after2.Annotations), rev)
	}
	if after1, err := f.work(t.Context(), "cluster1", "shop"); err != nil || after1.Generation != w1.Generation {
		t.Errorf("cluster1's work went from generation %d to %+v (%v) for a change of cluster2's facts", w1.Generation, after1, err)
	}

	// The broken override fixed: every cluster delivered, eu-2 with its region's registry.
	f.updateApp("shop", func(a *v1alpha2.ApplicationConfiguration) { a.Spec.Overrides = a.Spec.Overrides[:2] })
	f.waitApp("shop", "Ready on all 3 clusters", isReady)
	f.waitWork(eu2, "shop", "carrying its region's registry", func(mw *workv1.ManifestWork) bool {
		return workCarries(mw, "registry.eu.example.com/library/nginx:1")
	})
	// cluster1's render did not change with the overrides it is not selected by: its work says it
	// carries the new revision (what a rollout reads) without a new spec for its agent to apply.
	moved := f.waitWork("cluster1", "shop", "at the new revision", func(mw *workv1.ManifestWork) bool {
		return v1alpha2.WorkRevision(mw.Annotations) != rev
	})
	if moved.Generation != w1.Generation || moved.Annotations[hub.AnnotationSpecHash] != w1.Annotations[hub.AnnotationSpecHash] {
		t.Errorf("cluster1's work went from generation %d, spec %s to %d, %s; want its spec unchanged",
			w1.Generation, w1.Annotations[hub.AnnotationSpecHash], moved.Generation, moved.Annotations[hub.AnnotationSpecHash])
	}
}

// setClaim sets a ClusterClaim in a ManagedCluster's status, as its registration agent reports it; the
// claim is removed again when the test ends.
func (f *fixture) setClaim(cluster, name, value string) {
	f.t.Helper()
	set := func(value string) func(*clusterv1.ManagedCluster) {
		return func(mc *clusterv1.ManagedCluster) {
			claims := []clusterv1.ManagedClusterClaim{}
			for _, c := range mc.Status.ClusterClaims {
				if c.Name != name {
					claims = append(claims, c)
				}
			}
			if value != "" {
				claims = append(claims, clusterv1.ManagedClusterClaim{Name: name, Value: value})
			}
			mc.Status.ClusterClaims = claims
		}
	}
	f.editCluster(cluster, fmt.Sprintf("claim %s=%q", name, value), true, set(value), set(""))
}

// An edit of the overrides is a new revision like any other: under spec.rollout it reaches the canary
// first and the rest once approved, each cluster keeping what the overrides make of it; an override
// that breaks the canary halts the rollout, and the rollback gives the canary the stable revision's
// render again, overrides included.
func TestAnOverrideEditRollsOutStageByStageAndRollsBack(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	app := f.appConfig("web", onClusters(clusters...), v1alpha2.ApplicationConfigurationComponent{ComponentName: "web"})
	app.Spec.Rollout = &v1alpha2.Rollout{
		Stages:        []v1alpha2.RolloutStage{{Name: "canary", Clusters: []string{"cluster1"}}, {Name: "rest", RequireApproval: true}},
		RolloutConfig: v1alpha2.RolloutConfig{MinSuccessTime: &metav1.Duration{Duration: time.Second}},
		OnFailure:     v1alpha2.RolloutFailureRollback,
	}
	twoOnCluster2 := v1alpha2.Override{Name: "two-on-cluster2", Clusters: []string{"cluster2"}, Patches: []v1alpha2.ObjectPatch{
		{Target: v1alpha2.ObjectTarget{Kind: "Deployment", Name: "web"}, MergePatch: &runtime.RawExtension{Raw: []byte(`{"spec":{"replicas":2}}`)}}}}
	app.Spec.Overrides = []v1alpha2.Override{twoOnCluster2}
	f.createApp(app)
	inPhase := func(p v1alpha2.RolloutPhase, not ...string) func(*v1alpha2.ApplicationConfiguration) bool {
		return func(a *v1alpha2.ApplicationConfiguration) bool {
			ro := a.Status.Rollout
			return ro != nil && ro.Phase == p && !slices.Contains(not, ro.Revision)
		}
	}
	approve := func(revision string) {
		f.updateApp("web", func(a *v1alpha2.ApplicationConfiguration) {
			metav1.SetMetaDataAnnotation(&a.ObjectMeta, v1alpha2.AnnotationRolloutApprovals, revision+"=rest")
		})
	}
	replicas := func(cluster string, want int32, image string) {
		t.Helper()
		f.waitDeployment(cluster, "web", fmt.Sprintf("%d replicas of %s", want, image), func(d *appsv1.Deployment) bool {
			return d.Spec.Replicas != nil && *d.Spec.Replicas == want && d.Spec.Template.Spec.Containers[0].Image == image
		})
	}

	rev1 := f.waitApp("web", "first revision waiting for approval", inPhase(v1alpha2.RolloutWaitingForApproval)).Status.Rollout.Revision
	approve(rev1)
	f.waitApp("web", "first revision complete", inPhase(v1alpha2.RolloutComplete))
	replicas("cluster1", 1, "nginx:1")
	replicas("cluster2", 2, "nginx:1")

	// A new tag for every cluster, by an override: the canary first, cluster2 once approved, with its
	// two replicas still.
	f.updateApp("web", func(a *v1alpha2.ApplicationConfiguration) {
		a.Spec.Overrides = append(a.Spec.Overrides, v1alpha2.Override{Name: "tag", Image: &v1alpha2.ImageOverride{Tag: "2"}})
	})
	rev2 := f.waitApp("web", "the override edit waiting for approval", inPhase(v1alpha2.RolloutWaitingForApproval, rev1)).Status.Rollout.Revision
	replicas("cluster1", 1, "nginx:2")
	if got, err := f.carriedRevision(t.Context(), app, "cluster2"); err != nil || got != rev1 {
		t.Fatalf("cluster2 carries %s (%v) before its stage is approved, want %s", got, err, rev1)
	}
	approve(rev2)
	f.waitApp("web", "the override edit complete", func(a *v1alpha2.ApplicationConfiguration) bool {
		return inPhase(v1alpha2.RolloutComplete)(a) && a.Status.Rollout.StableRevision == rev2
	})
	replicas("cluster2", 2, "nginx:2")

	// An override whose pods no node takes on the canary, three seconds to make progress: halted, and
	// rolled back to rev2 as it was rendered for cluster1.
	f.updateApp("web", func(a *v1alpha2.ApplicationConfiguration) {
		a.Spec.Overrides = append(a.Spec.Overrides, v1alpha2.Override{Name: "nowhere", Clusters: []string{"cluster1"}, Patches: []v1alpha2.ObjectPatch{
			{Target: v1alpha2.ObjectTarget{Kind: "Deployment", Name: "web"}, MergePatch: &runtime.RawExtension{Raw: []byte(
				`{"spec":{"progressDeadlineSeconds":3,"template":{"spec":{"nodeSelector":{"ferry.io/test-no-such-node":"true"}}}}}`)}}}})
	})
	back := f.waitApp("web", "rolled back", inPhase(v1alpha2.RolloutRolledBack, rev1, rev2))
	if ro := back.Status.Rollout; ro.StableRevision != rev2 || len(ro.Failures) != 1 || ro.Failures[0].Cluster != "cluster1" {
		t.Fatalf("rollout once rolled back: %+v, want cluster1 failed and %s stable", ro, rev2)
	}
	f.eventually("cluster1 back at "+rev2, func(ctx context.Context) (bool, error) {
		got, err := f.carriedRevision(ctx, app, "cluster1")
		return got == rev2, err
	})
	d := f.waitDeployment("cluster1", "web", "without the failed override's node selector", func(d *appsv1.Deployment) bool {
		return d.Spec.Template.Spec.NodeSelector == nil
	})
	if image(d) != "nginx:2" || *d.Spec.Replicas != 1 {
		t.Errorf("cluster1's Deployment after the rollback: %s × %d, want rev2's nginx:2 × 1", image(d), *d.Spec.Replicas)
	}
	if got, err := f.carriedRevision(t.Context(), app, "cluster2"); err != nil || got != rev2 {
		t.Errorf("cluster2 carries %s (%v), want %s: a failed canary leaves it alone", got, err, rev2)
	}
}

// An override of a component changes, for the clusters it selects, the entry's parameter values and
// traits as if the AppConfig said so for them: cluster2 runs 3 replicas and its ScalerTrait takes a value
// from its ClusterClaim, replacing the entry's trait of that kind (same name, still pointing at the
// workload); cluster1 keeps the entry as written; a cluster the override names outside the placement gets
// nothing. An override naming a parameter the component does not
// have fails on the clusters it selects, which keep what they have, while the others get the revision.
func TestOverridesOfAComponentChangeItsParameterValuesAndTraits(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.setClaim("cluster2", "scale.example.com", "5")
	outside := "outside-" + f.ns // a cluster the placement does not name: an override cannot reach it
	f.addManagedCluster(outside, nil)
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	app := f.appConfig("shop", onClusters("cluster1", "cluster2"), v1alpha2.ApplicationConfigurationComponent{ComponentName: "web",
		Traits: []v1alpha2.ComponentTrait{traitOf(scalerTraitGVK, `{"replicaCount":2}`)}})
	app.Spec.Overrides = []v1alpha2.Override{{Name: "big-cluster2", Clusters: []string{"cluster2", outside}, Components: []v1alpha2.ComponentOverride{{
		ComponentName:   "web",
		ParameterValues: []v1alpha2.ComponentParameterValue{param("replicas", `3`)},
		Traits:          []v1alpha2.ComponentTrait{traitOf(scalerTraitGVK, `{"replicaCount":"${cluster.claims[scale.example.com]}"}`)},
	}}}}
	f.createApp(app)

	replicaCount := func(cluster, want string) {
		t.Helper()
		f.waitSpokeObject(cluster, scalerTraitGVK, "web-scalertrait", "replicaCount "+want+", pointing at the Deployment web", func(u *unstructured.Unstructured) bool {
			got, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "replicaCount")
			ref, _, _ := unstructured.NestedString(u.Object, "spec", "workloadRef", "name")
			return fmt.Sprint(got) == want && ref == "web"
		})
	}
	replicaCount("cluster2", "5")
	replicaCount("cluster1", "2")
	f.waitDeployment("cluster2", "web", "3 replicas", func(d *appsv1.Deployment) bool { return *d.Spec.Replicas == 3 })
	f.waitDeployment("cluster1", "web", "1 replica", func(d *appsv1.Deployment) bool { return *d.Spec.Replicas == 1 })
	w2, err := f.work(t.Context(), "cluster2", "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.work(t.Context(), outside, "shop"); err == nil {
		t.Errorf("%s got a ManifestWork: an override selects among the placement's clusters, it does not add any", outside)
	}
	if n := len(w2.Spec.Workload.Manifests); n != 2 {
		t.Errorf("cluster2's work holds %d manifests, want the workload and the one ScalerTrait the override replaced", n)
	}

	f.updateApp("shop", func(a *v1alpha2.ApplicationConfiguration) {
		a.Spec.Overrides[0].Components[0].ParameterValues = []v1alpha2.ComponentParameterValue{param("replica", `4`)}
		a.Spec.Overrides = append(a.Spec.Overrides, v1alpha2.Override{Name: "tier", Labels: map[string]string{"example.com/tier": "web"}})
	})
	got := f.waitApp("shop", "not ready for an unknown parameter", notReadyBecause("OverrideFailed"))
	if msg := ready(got).Message; !strings.Contains(msg, `override big-cluster2 for cluster cluster2: component web: parameter "replica" is not a parameter of the component`) {
		t.Errorf("Ready says %q; want it to name the override, the cluster and the parameter", msg)
	}
	f.waitDeployment("cluster1", "web", "the new revision's label", func(d *appsv1.Deployment) bool { return d.Labels["example.com/tier"] == "web" })
	if after, err := f.work(t.Context(), "cluster2", "shop"); err != nil || after.Generation != w2.Generation {
		t.Errorf("cluster2's work after a broken override: %v, generation %d → %+v; want it as delivered", err, w2.Generation, after)
	}
}
