package hub_test

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/render"
)

// A ManagedCluster being deleted leaves every placement at once, even while a finalizer holds it:
// the hub deletes the ManifestWorks of the AppConfigs placed on it within seconds, with nothing else
// happening to bring those AppConfigs back (no periodic resync comes for hours).
func TestManagedClusterBeingDeletedLosesItsWorksAtOnce(t *testing.T) {
	const hold = "ferry.io/test-hold"
	f := setup(t)
	key := "ferry.io/test-" + f.ns
	cluster := "leaving-" + f.ns
	mc := f.addManagedCluster(cluster, map[string]string{key: "prod"})
	f.setClusterFinalizer(mc, hold, true)
	t.Cleanup(func() { f.setClusterFinalizer(mc, hold, false) })

	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	f.waitLatest("web", "web-v1")
	f.createApp(f.appConfig("shop", &v1alpha2.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{key: "prod"}}},
		v1alpha2.ApplicationConfigurationComponent{ComponentName: "web"}))
	f.waitWork(cluster, "shop", "written", func(*workv1.ManifestWork) bool { return true })
	f.waitApp("shop", "Ready on the leaving cluster", func(app *v1alpha2.ApplicationConfiguration) bool {
		return isReady(app) && app.Status.Summary != nil && app.Status.Summary.Clusters == 1
	})
	// Nothing is left to reconcile the AppConfig for: only the cluster's deletion can bring it back.
	f.eventually("the hub has nothing left to do", func(ctx context.Context) (bool, error) {
		reconciles := appConfigReconciles(t)
		f.consistently("no reconcile", time.Second, func(context.Context) (bool, error) { return true, nil })
		return appConfigReconciles(t) == reconciles, nil
	})

	if err := f.hub.Delete(t.Context(), mc); err != nil {
		t.Fatal(err)
	}
	if err := f.hub.Get(t.Context(), client.ObjectKeyFromObject(mc), mc); err != nil || mc.DeletionTimestamp == nil {
		t.Fatalf("ManagedCluster %s not held by its finalizer while deleted: %v (error %v)", cluster, mc.DeletionTimestamp, err)
	}
	start := time.Now()
	f.within("the ManifestWork on the cluster being deleted deleted", 10*time.Second, func(ctx context.Context) (bool, error) {
		mw, err := f.work(ctx, cluster, "shop")
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err == nil && mw.DeletionTimestamp == nil {
			err = errors.New("the ManifestWork is still there, not being deleted")
		}
		return err == nil, err
	})
	t.Logf("ManifestWork deleted %v after its ManagedCluster", time.Since(start).Round(time.Millisecond))
	f.waitApp("shop", "Ready with no cluster", func(app *v1alpha2.ApplicationConfiguration) bool {
		return isReady(app) && len(app.Status.Clusters) == 0 && app.Status.Summary != nil && app.Status.Summary.Clusters == 0
	})
}

// setClusterFinalizer adds (add) or removes a finalizer of a ManagedCluster.
func (f *fixture) setClusterFinalizer(mc *clusterv1.ManagedCluster, finalizer string, add bool) {
	f.t.Helper()
	f.eventually("finalizer "+finalizer+" of ManagedCluster "+mc.Name, func(ctx context.Context) (bool, error) {
		now := &clusterv1.ManagedCluster{}
		if err := f.hub.Get(ctx, client.ObjectKeyFromObject(mc), now); err != nil {
			return apierrors.IsNotFound(err) && !add, client.IgnoreNotFound(err)
		}
		if add {
			controllerutil.AddFinalizer(now, finalizer)
		} else {
			controllerutil.RemoveFinalizer(now, finalizer)
		}
		return true, f.hub.Update(ctx, now)
	})
}
