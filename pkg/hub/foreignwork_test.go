package hub_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
	"github.com/ferry-mc/ferry/pkg/render"
)

// A ManifestWork of the name Ferry would give an AppConfig's work, which Ferry did not create for that
// AppConfig — one without Ferry's labels, or one labelled for another AppConfig — is neither adopted
// nor overwritten: the AppConfig says which work is in the way and what to do, and is delivered to its
// other clusters. Once the foreign work is deleted, the AppConfig gets its own there too.
func TestForeignManifestWorkIsNeitherAdoptedNorOverwritten(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	// One component each: two AppConfigs delivering one Deployment would be a clash of their own.
	for _, app := range []string{"shop", "cart"} {
		f.mustCreate(f.hub, f.webComponent(app+"-web", "nginx:1"))
		f.waitLatest(app+"-web", app+"-web-v1")
	}

	// shop's name is taken on cluster1 by a work without Ferry's labels; cart's on cluster2 by a work
	// labelled for another AppConfig.
	foreign := map[string]*workv1.ManifestWork{
		"shop": f.foreignWork("cluster1", "shop", nil),
		"cart": f.foreignWork("cluster2", "cart", map[string]string{hub.LabelAppConfigNamespace: f.ns, hub.LabelAppConfigName: "someone-else"}),
	}
	delivered := map[string]string{"shop": "cluster2", "cart": "cluster1"} // the cluster each still reaches
	for app := range foreign {
		f.createApp(f.appConfig(app, onClusters(clusters...), v1alpha2.ApplicationConfigurationComponent{ComponentName: app + "-web"}))
	}

	for app, mw := range foreign {
		got := f.waitApp(app, "Ready=False, reason ManifestWorkNotOwned, counting the one cluster it reaches", func(app *v1alpha2.ApplicationConfiguration) bool {
			return notReadyBecause("ManifestWorkNotOwned")(app) && app.Status.Summary != nil && app.Status.Summary.Clusters == 1
		})
		if works, err := f.works(t.Context(), app); err != nil || len(works) != 1 || works[0].Namespace != delivered[app] {
			t.Errorf("%s: its ManifestWorks %v (error %v), want one on %s", app, works, err, delivered[app])
		}
		msg := ready(got).Message
		for _, says := range []string{mw.Namespace + "/" + mw.Name, "rename or delete"} {
			if !strings.Contains(msg, says) {
				t.Errorf("%s: Ready message %q does not say %q", app, msg, says)
			}
		}
		t.Logf("%s: %s", app, msg)
		f.waitWork(delivered[app], app, "applied", workApplied)
		f.waitImage(delivered[app], app+"-web", "nginx:1")
	}
	f.consistently("the foreign ManifestWorks untouched", time.Second, func(ctx context.Context) (bool, error) {
		for _, before := range foreign {
			now := &workv1.ManifestWork{}
			if err := f.hub.Get(ctx, client.ObjectKeyFromObject(before), now); err != nil {
				return false, err
			}
			// The agent may report on it (status): what Ferry could change is spec and metadata.
			if now.UID != before.UID || now.Generation != before.Generation || now.DeletionTimestamp != nil ||
				!equality.Semantic.DeepEqual(now.Spec, before.Spec) || !equality.Semantic.DeepEqual(now.Labels, before.Labels) ||
				!equality.Semantic.DeepEqual(now.Annotations, before.Annotations) {
				return false, fmt.Errorf("ManifestWork %s/%s changed: generation %d→%d, labels %v, annotations %v",
					now.Namespace, now.Name, before.Generation, now.Generation, now.Labels, now.Annotations)
			}
		}
		return true, nil
	})

	// The foreign works go: each AppConfig gets its own work there, without anything else changing.
	for _, mw := range foreign {
		if err := f.hub.Delete(t.Context(), mw); err != nil {
			t.Fatal(err)
		}
	}
	for app := range foreign {
		f.waitDelivered(app, clusters...)
	}
}

// foreignWork creates, in a cluster namespace, a ManifestWork of the name of the test's AppConfig app
// with labels, as someone other than Ferry would: it delivers a ConfigMap. It is deleted when the test
// ends, and returned as stored once its agent has reported on it.
func (f *fixture) foreignWork(cluster, app string, labels map[string]string) *workv1.ManifestWork {
	f.t.Helper()
	mw := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: f.ns + "." + app, Labels: labels},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"foreign-` + app + `","namespace":"` + f.ns + `"},"data":{"owner":"not ferry"}}`)}}}}},
	}
	f.mustCreate(f.hub, mw)
	f.t.Cleanup(func() {
		if err := f.hub.Delete(context.Background(), mw); client.IgnoreNotFound(err) != nil {
			f.t.Errorf("delete ManifestWork %s/%s: %v", mw.Namespace, mw.Name, err)
		}
	})
	var stored *workv1.ManifestWork
	f.eventually("the agent applied the foreign work "+mw.Name+" on "+cluster, func(ctx context.Context) (bool, error) {
		stored = &workv1.ManifestWork{}
		if err := f.hub.Get(ctx, client.ObjectKeyFromObject(mw), stored); err != nil {
			return false, err
		}
		return workApplied(stored), nil
	})
	return stored
}
