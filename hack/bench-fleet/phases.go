package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/internal/testing/fleetsim"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
)

func (b *bench) register(ctx context.Context) error {
	start := time.Now()
	names, err := fleetsim.RegisterClusters(ctx, b.admin, fleetsim.ClusterOptions{Count: b.o.clusters, Concurrency: b.o.registerParallel,
		ClusterSets: b.o.setNames(), Regions: b.o.regions()})
	if err != nil {
		return err
	}
	b.clusters = names
	b.res.Register = &RegisterResult{Clusters: len(names), Seconds: time.Since(start).Seconds()}
	return nil
}

// bindClusterSets creates the AppConfigs' namespaces and the ManagedClusterSets (global, or
// --cluster-sets exclusive ones), and binds every set in every one of the namespaces, so that every
// AppConfig reaches every cluster. A ferry-hub that ignores sets and bindings is not affected.
func (b *bench) bindClusterSets(ctx context.Context) error {
	return fleetsim.BindClusterSets(ctx, b.admin, b.o.sets(), b.o.appNamespaces(), 16)
}

// createComponents creates web-0 … web-<M-1> (each in its AppConfig's namespace, which
// bindClusterSets made) and waits for the hub to record a revision of each, so that the AppConfigs
// find them rendered.
func (b *bench) createComponents(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	want := map[types.NamespacedName]bool{}
	for i := range b.o.appConfigs {
		c := component(b.o.appNamespace(i), i, image)
		want[client.ObjectKeyFromObject(c)] = true
		g.Go(func() error {
			if err := b.client.Create(gctx, c); err != nil {
				return fmt.Errorf("create Component %s/%s: %w", c.Namespace, c.Name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	revised := 0
	return b.waitFor(ctx, "a revision of every Component", b.o.timeout,
		func() string { return fmt.Sprintf("%d of %d Components have one", revised, b.o.appConfigs) },
		func(ctx context.Context) (bool, error) {
			list := &v1alpha2.ComponentList{}
			if err := b.client.List(ctx, list, &client.ListOptions{Namespace: b.o.watchedNamespace()}); err != nil {
				return false, err
			}
			revised = 0
			for _, c := range list.Items {
				if want[client.ObjectKeyFromObject(&c)] && c.Status.LatestRevision != nil {
					revised++
				}
			}
			return revised == b.o.appConfigs, nil
		})
}

// writeWorks creates the AppConfigs and waits until the hub has written their N×M ManifestWorks.
func (b *bench) writeWorks(ctx context.Context) error {
	want := b.o.clusters * b.o.appConfigs
	writes0 := hubWrites(ctx, b.hubs)
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range b.o.appConfigs {
		g.Go(func() error {
			app := appConfig(b.o.appNamespace(i), i)
			if b.o.overrides {
				app.Spec.Overrides = overrides(i, "registry")
			}
			if err := b.client.Create(gctx, app); err != nil {
				return fmt.Errorf("create AppConfig %s/%s: %w", app.Namespace, app.Name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	err := b.waitFor(ctx, fmt.Sprintf("%d ManifestWorks", want), b.o.worksTimeout,
		func() string { return fmt.Sprintf("%d of %d ManifestWorks exist", b.tracker.Count(), want) },
		func(context.Context) (bool, error) { return b.tracker.Count() >= want, b.tracker.Err() })
	if err != nil {
		return err
	}
	works := b.tracker.Works()
	perApp := map[string]int{} // by the AppConfig's namespace/name
	var last time.Time
	for _, w := range works {
		perApp[w.Labels[hub.LabelAppConfigNamespace]+"/"+w.Labels[hub.LabelAppConfigName]]++
		if w.Seen.After(last) {
			last = w.Seen
		}
	}
	for i := range b.o.appConfigs {
		app := b.o.appNamespace(i) + "/" + appName(i)
		if n := perApp[app]; n != b.o.clusters {
			return fmt.Errorf("AppConfig %s has %d ManifestWorks, want one on each of the %d clusters (works by AppConfig: %v)", app, n, b.o.clusters, perApp)
		}
	}
	writes1 := hubWrites(ctx, b.hubs)
	seconds := last.Sub(start).Seconds()
	b.res.Works = &WorksResult{Count: len(works), Seconds: seconds, PerSecond: float64(len(works)) / seconds,
		HubWritesPerWork: (writes1 - writes0) / float64(len(works))}
	return nil
}

// firstStatus reports every work healthy, as every agent does once it has applied its work, and
// waits until every AppConfig's summary shows all its clusters applied, available and healthy.
func (b *bench) firstStatus(ctx context.Context) error {
	works := b.tracker.Works()
	agents, err := fleetsim.NewAgents(b.workAPI, fleetsim.AgentOptions{Rate: b.o.initialRate, Concurrency: b.o.agentConcurrency})
	if err != nil {
		return err
	}
	start := time.Now()
	stopProgress := b.progress(ctx, func() string { return fmt.Sprintf("%d of %d first reports written", agents.Written(), len(works)) })
	_, err = agents.WriteAll(ctx, works, fleetsim.Healthy)
	stopProgress()
	if err != nil {
		return err
	}
	written := time.Since(start)
	n := b.o.clusters
	if err := b.waitSummaries(ctx, "every AppConfig to show every cluster applied, available and healthy", func(s fleetsim.Summary) bool {
		return s.Clusters == n && s.Applied == n && s.Available == n && s.Healthy == n
	}); err != nil {
		return err
	}
	b.res.Initial = &InitialResult{Writes: len(works), WriteSeconds: written.Seconds(), SummarySeconds: b.lastSummaryChange().Sub(start).Seconds()}
	return nil
}

// progress logs how far a long step got every progressEvery until the returned stop is called.
func (b *bench) progress(ctx context.Context, status func() string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				b.logf("  %s", status())
			}
		}
	}()
	return func() { cancel(); <-done }
}

// waitSummaries waits until every AppConfig's latest summary satisfies ok.
func (b *bench) waitSummaries(ctx context.Context, what string, ok func(fleetsim.Summary) bool) error {
	return b.waitFor(ctx, what, b.o.timeout, b.summaries, func(context.Context) (bool, error) {
		for i := range b.o.appConfigs {
			if o, seen := b.apps.Latest(appName(i)); !seen || !ok(o.Summary) {
				return false, b.apps.Err()
			}
		}
		return true, nil
	})
}

// summaries says in one line where the AppConfigs' summaries are: applied/available/healthy of N.
func (b *bench) summaries() string {
	var parts []string
	for i := range b.o.appConfigs {
		o, _ := b.apps.Latest(appName(i))
		parts = append(parts, fmt.Sprintf("%s %d/%d/%d", appName(i), o.Applied, o.Available, o.Healthy))
	}
	return fmt.Sprintf("applied/available/healthy of %d clusters: %s", b.o.clusters, strings.Join(parts, ", "))
}

// lastSummaryChange is when the last of the AppConfigs' summaries took its current value.
func (b *bench) lastSummaryChange() time.Time {
	var last time.Time
	for i := range b.o.appConfigs {
		if o, _ := b.apps.Latest(appName(i)); o.At.After(last) {
			last = o.At
		}
	}
	return last
}

// measureAppConfigs finds the largest AppConfig, as its JSON from a GET.
func (b *bench) measureAppConfigs(ctx context.Context) error {
	var sizes []SizeResult
	for i := range b.o.appConfigs {
		raw, err := b.kube.CoreV1().RESTClient().Get().
			AbsPath("/apis", v1alpha2.SchemeGroupVersion.Group, v1alpha2.SchemeGroupVersion.Version, "namespaces", b.o.appNamespace(i), "applicationconfigurations", appName(i)).
			DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("get AppConfig %s: %w", appName(i), err)
		}
		sizes = append(sizes, SizeResult{Name: appName(i), Bytes: len(raw)})
	}
	sort.SliceStable(sizes, func(i, j int) bool { return sizes[i].Bytes > sizes[j].Bytes })
	b.res.Largest = &sizes[0]
	return nil
}
