package hub_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/render"
)

// BenchmarkHub100AppConfigsOnTwoClusters measures the hub end to end with the real agents: 100
// AppConfigs (a Deployment and a trait each) placed on both clusters are created at once, and the clock
// stops when every one reports both clusters available. It reports AppConfigs delivered per second and
// the hub controllers' writes per AppConfig (ManifestWorks, finalizers, status, events). Run with
// -benchtime=1x.
func BenchmarkHub100AppConfigsOnTwoClusters(b *testing.B) {
	const apps = 100
	f := setup(b)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	f.waitLatest("web", "web-v1")
	watcher, err := client.NewWithWatch(f.env.Hub.Config, client.Options{Scheme: f.scheme})
	if err != nil {
		b.Fatal(err)
	}
	round := 0
	for b.Loop() {
		b.StopTimer()
		round++
		names := make([]string, apps)
		for i := range names {
			names[i] = fmt.Sprintf("app-%d-%03d", round, i)
		}
		b.Cleanup(func() { f.deleteApps(names) })
		writes0 := f.hubWrites.Load()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		w, err := watcher.Watch(ctx, &v1alpha2.ApplicationConfigurationList{}, client.InNamespace(f.ns))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		var g errgroup.Group
		g.SetLimit(16)
		for _, name := range names {
			g.Go(func() error { return f.hub.Create(ctx, f.appConfig(name, onClusters(clusters...), shopEntry())) })
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		available := map[string]bool{}
		for ev := range w.ResultChan() {
			if app, ok := ev.Object.(*v1alpha2.ApplicationConfiguration); ok && ev.Type != watch.Deleted &&
				app.Status.Summary != nil && app.Status.Summary.Available == "2/2" && app.Status.ObservedGeneration == app.Generation {
				available[app.Name] = true
			}
			if len(available) == apps {
				break
			}
		}
		elapsed := time.Since(start)
		b.StopTimer()
		w.Stop()
		cancel()
		if len(available) != apps {
			b.Fatalf("%d of %d AppConfigs available on both clusters", len(available), apps)
		}
		b.ReportMetric(apps/elapsed.Seconds(), "appconfigs/s")
		b.ReportMetric(float64(f.hubWrites.Load()-writes0)/apps, "hub-writes/appconfig")
		b.StartTimer()
	}
}

// deleteApps deletes AppConfigs and waits until they and their ManifestWorks are gone.
func (f *fixture) deleteApps(names []string) {
	f.t.Helper()
	for _, name := range names {
		app := &v1alpha2.ApplicationConfiguration{}
		app.Namespace, app.Name = f.ns, name
		if err := f.hub.Delete(context.Background(), app); client.IgnoreNotFound(err) != nil {
			f.t.Errorf("delete AppConfig %s: %v", name, err)
		}
	}
	f.eventually("AppConfigs and their ManifestWorks gone", func(ctx context.Context) (bool, error) {
		list := &v1alpha2.ApplicationConfigurationList{}
		if err := f.hub.List(ctx, list, client.InNamespace(f.ns)); err != nil || len(list.Items) > 0 {
			return false, err
		}
		for _, name := range names {
			if works, err := f.works(ctx, name); err != nil || len(works) > 0 {
				return false, err
			}
		}
		return true, nil
	})
}
