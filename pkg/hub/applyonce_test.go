package hub_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
	"github.com/ferry-mc/ferry/pkg/render"
)

// deliverShop delivers the shop (see shopEntry) to both clusters under the running hub and returns the
// UIDs of its Deployment and trait on each.
func (f *fixture) deliverShop() (deployments, traits map[string]types.UID) {
	f.t.Helper()
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	f.createApp(f.appConfig("shop", onClusters(clusters...), shopEntry()))
	f.waitDelivered("shop", clusters...)
	deployments, traits = map[string]types.UID{}, map[string]types.UID{}
	for _, c := range clusters {
		deployments[c], traits[c] = f.waitShopOn(c, "nginx:2")
	}
	return deployments, traits
}

// checkStrategies fails the test unless every manifest of the shop's work on cluster has strategy want.
func (f *fixture) checkStrategies(cluster string, want workv1.UpdateStrategyType) {
	f.t.Helper()
	mw, err := f.work(f.t.Context(), cluster, "shop")
	if err != nil {
		f.t.Fatal(err)
	}
	for _, cfg := range mw.Spec.ManifestConfigs {
		if cfg.UpdateStrategy == nil || cfg.UpdateStrategy.Type != want {
			f.t.Errorf("%s %s: update strategy %v, want %s", cfg.ResourceIdentifier.Resource, cfg.ResourceIdentifier.Name, cfg.UpdateStrategy, want)
		}
	}
}

// setSpokeImage changes a Deployment's image directly on a spoke, as someone using kubectl on it would.
func (f *fixture) setSpokeImage(cluster, name, image string) {
	f.t.Helper()
	f.eventually("set the image of "+name+" on "+cluster, func(ctx context.Context) (bool, error) {
		d, err := f.deployment(ctx, cluster, name)
		if err != nil {
			return false, err
		}
		d.Spec.Template.Spec.Containers[0].Image = image
		return true, f.spokes[cluster].Update(ctx, d)
	})
}

// deleteOnSpoke deletes an object of the test's namespace on a spoke and waits until it is gone or, if
// the agent re-created it at once, replaced; it returns the UID of the object it deleted.
func (f *fixture) deleteOnSpoke(cluster string, obj client.Object) types.UID {
	f.t.Helper()
	c := f.spokes[cluster]
	obj.SetNamespace(f.ns)
	if err := c.Get(f.t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
		f.t.Fatalf("get %s on %s: %v", obj.GetName(), cluster, err)
	}
	uid := obj.GetUID()
	if err := c.Delete(f.t.Context(), obj, client.Preconditions{UID: &uid}); err != nil {
		f.t.Fatalf("delete %s on %s: %v", obj.GetName(), cluster, err)
	}
	f.eventually(fmt.Sprintf("%s deleted on %s", obj.GetName(), cluster), func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && obj.GetUID() != uid, err
	})
	return uid
}

func scalerTrait(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(scalerTraitGVK)
	u.SetName(name)
	return u
}

// setReplicas sets the shop's replicas parameter: a change of the AppConfig's spec, so a new generation.
func (f *fixture) setReplicas(n int) int64 {
	f.t.Helper()
	f.updateApp("shop", func(app *v1alpha2.ApplicationConfiguration) {
		entry := shopEntry()
		entry.ParameterValues = append(entry.ParameterValues, param("replicas", strconv.Itoa(n)))
		app.Spec.Components = []v1alpha2.ApplicationConfigurationComponent{entry}
	})
	app, err := f.app(f.t.Context(), "shop")
	if err != nil {
		f.t.Fatal(err)
	}
	return app.Generation
}

// hubSpec reports whether a Deployment is the shop's as the hub renders it at AppConfig generation gen.
func hubSpec(gen int64, replicas int32) func(*appsv1.Deployment) bool {
	return func(d *appsv1.Deployment) bool {
		return image(d) == "nginx:2" && ptr.Deref(d.Spec.Replicas, 0) == replicas &&
			d.Annotations[hub.AnnotationAppGen] == strconv.FormatInt(gen, 10)
	}
}

// Apply-once-only, "on", through the whole chain (hub → ManifestWork → agent → spoke): a change made to the
// workload on the spoke stays, however often the agent goes over the work, until the AppConfig's spec
// changes; then the hub's spec wins. An object deleted on the spoke is re-created.
func TestApplyOnceOnlyOnKeepsSpokeChangesUntilTheAppConfigChanges(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOn))
	deployments, traits := f.deliverShop()
	f.checkStrategies("cluster1", "ApplyOnce")

	f.setSpokeImage("cluster1", "web", "nginx:edited")
	// The agent goes over the whole work again: the trait, deleted on cluster1, is re-created (under
	// ApplyOnce a missing object is), and the Deployment's change is left alone.
	f.deleteOnSpoke("cluster1", scalerTrait("web-scalertrait"))
	f.waitSpokeObject("cluster1", scalerTraitGVK, "web-scalertrait", "re-created",
		func(u *unstructured.Unstructured) bool { return u.GetUID() != traits["cluster1"] })
	f.waitDelivered("shop", clusters...)
	f.consistently("the image changed on cluster1 stays, cluster2 keeps the hub's", 3*time.Second, func(ctx context.Context) (bool, error) {
		d1, err := f.deployment(ctx, "cluster1", "web")
		if err != nil || image(d1) != "nginx:edited" || d1.UID != deployments["cluster1"] {
			return false, fmt.Errorf("cluster1: image %s (error %v)", image(d1), err)
		}
		d2, err := f.deployment(ctx, "cluster2", "web")
		if err != nil || image(d2) != "nginx:2" {
			return false, fmt.Errorf("cluster2: image %s (error %v)", image(d2), err)
		}
		return true, nil
	})

	// A new generation of the AppConfig: the hub's spec wins on both spokes, the image included.
	gen := f.setReplicas(2)
	for _, c := range clusters {
		d := f.waitDeployment(c, "web", fmt.Sprintf("the hub's spec of generation %d", gen), hubSpec(gen, 2))
		if d.UID != deployments[c] {
			t.Errorf("%s: the Deployment was re-created, not updated", c)
		}
	}
	f.waitDelivered("shop", clusters...)
}

// Apply-once-only, "force", through the whole chain: a workload deleted on the spoke is not re-created, however
// often the agent goes over the work, until the AppConfig's spec changes; then it is.
func TestApplyOnceOnlyForceLeavesDeletedObjectsDeletedUntilTheAppConfigChanges(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceForce))
	deployments, traits := f.deliverShop()
	f.checkStrategies("cluster1", "ApplyOnceForce")

	// The Deployment, then its trait, deleted on cluster1: each time the agent goes over the work and
	// reports the object gone (not available), and re-creates neither.
	f.deleteOnSpoke("cluster1", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}})
	f.waitWork("cluster1", "shop", "reports the Deployment deleted and left so", skippedAt(0))
	f.deleteOnSpoke("cluster1", scalerTrait("web-scalertrait"))
	f.waitWork("cluster1", "shop", "reports the trait deleted and left so", func(mw *workv1.ManifestWork) bool { return skippedAt(0)(mw) && skippedAt(1)(mw) })
	f.waitApp("shop", "shows both objects unavailable on cluster1", func(app *v1alpha2.ApplicationConfiguration) bool {
		d, tr := manifestStatus(app, "cluster1", "Deployment", "web"), manifestStatus(app, "cluster1", scalerTraitGVK.Kind, "web-scalertrait")
		return d != nil && tr != nil && d.Available == metav1.ConditionFalse && tr.Available == metav1.ConditionFalse &&
			clusterStatus(app, "cluster1").Available == metav1.ConditionFalse
	})
	f.consistently("the objects stay deleted on cluster1, and cluster2 keeps them", 3*time.Second, func(ctx context.Context) (bool, error) {
		if _, err := f.deployment(ctx, "cluster1", "web"); !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("the Deployment on cluster1: %v, want not found", err)
		}
		if _, err := f.spokeObject(ctx, "cluster1", scalerTraitGVK, "web-scalertrait"); !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("the trait on cluster1: %v, want not found", err)
		}
		d2, err := f.deployment(ctx, "cluster2", "web")
		if err != nil || d2.UID != deployments["cluster2"] {
			return false, fmt.Errorf("cluster2's Deployment changed (error %v)", err)
		}
		return true, nil
	})

	// A new generation of the AppConfig: both are re-created on cluster1; cluster2's are updated.
	gen := f.setReplicas(2)
	for _, c := range clusters {
		d := f.waitDeployment(c, "web", fmt.Sprintf("the hub's spec of generation %d", gen), hubSpec(gen, 2))
		if recreated := d.UID != deployments[c]; recreated != (c == "cluster1") {
			t.Errorf("%s: Deployment re-created = %v", c, recreated)
		}
		f.waitSpokeObject(c, scalerTraitGVK, "web-scalertrait", "the hub's", func(u *unstructured.Unstructured) bool {
			return u.GetAnnotations()[hub.AnnotationAppGen] == strconv.FormatInt(gen, 10) && (c != "cluster1" || u.GetUID() != traits[c])
		})
	}
	f.waitDelivered("shop", clusters...)
}

// skippedAt reports whether the work's status says, at its generation, that the manifest of that
// ordinal is applied but, deleted on the spoke, not available: ApplyOnceForce left it deleted.
func skippedAt(ordinal int32) func(*workv1.ManifestWork) bool {
	return func(mw *workv1.ManifestWork) bool {
		for _, m := range mw.Status.ResourceStatus.Manifests {
			if m.ResourceMeta.Ordinal != ordinal {
				continue
			}
			applied, available := findCondition(m.Conditions, workv1.ManifestApplied), findCondition(m.Conditions, workv1.ManifestAvailable)
			return applied != nil && applied.Status == metav1.ConditionTrue && applied.ObservedGeneration == mw.Generation &&
				available != nil && available.Status == metav1.ConditionFalse && available.ObservedGeneration == mw.Generation
		}
		return false
	}
}
