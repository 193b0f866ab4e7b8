package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/ferry-mc/ferry/internal/testing/fleetsim"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
)

// changeComponent changes web-0's image and counts the works the hub rewrites for it: all of app-0's
// and nothing else is right.
func (b *bench) changeComponent(ctx context.Context) error {
	app := appName(0)
	res, err := b.measureRewrites(ctx, fmt.Sprintf("%s's works", app), b.o.clusters,
		func(w *fleetsim.Work) bool { return w.Labels[hub.LabelAppConfigName] == app },
		func(ctx context.Context) error {
			c := &v1alpha2.Component{}
			if err := b.client.Get(ctx, types.NamespacedName{Namespace: b.o.appNamespace(0), Name: componentName(0)}, c); err != nil {
				return err
			}
			c.Spec.Workload = component(b.o.appNamespace(0), 0, changedImage).Spec.Workload
			if err := b.client.Update(ctx, c); err != nil {
				return fmt.Errorf("change the image of Component %s: %w", componentName(0), err)
			}
			return nil
		})
	b.res.Change = res
	return err
}

// measureRewrites makes change (again on a conflict) and counts the works the hub rewrites: the
// expected ones, count of them, and the others (none is right). It waits until every expected work
// has a new generation and then until ferry-hub is idle (nothing queued, nothing in progress), so that
// a work rewritten late, or one that should not have been, is counted too.
func (b *bench) measureRewrites(ctx context.Context, what string, count int, expected func(*fleetsim.Work) bool, change func(context.Context) error) (*ChangeResult, error) {
	before := generations{}
	b.tracker.Range(func(w *fleetsim.Work) { before[keyOf(w)] = w.Generation })
	writes0 := hubWrites(ctx, b.hubs)
	start := time.Now()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error { return change(ctx) }); err != nil {
		return nil, err
	}
	rewritten := func() (ofExpected, others int, last time.Time) { return rewrites(b.tracker.Range, before, expected) }
	progress := func() string {
		ofExpected, others, _ := rewritten()
		return fmt.Sprintf("%d of %s (%d) rewritten, %d others; ferry-hub wrote %.0f", ofExpected, what, count, others, hubWrites(ctx, b.hubs)-writes0)
	}
	err := b.waitFor(ctx, "every one of "+what+" rewritten", b.o.timeout, progress, func(context.Context) (bool, error) {
		ofExpected, _, _ := rewritten()
		return ofExpected >= count, nil
	})
	if err != nil {
		return nil, err
	}
	if err := b.waitHubIdle(ctx); err != nil {
		return nil, err
	}
	writes1 := hubWrites(ctx, b.hubs)
	ofExpected, others, last := rewritten()
	return &ChangeResult{Expected: count, Rewritten: ofExpected + others, OfApp: ofExpected, Others: others,
		Seconds: last.Sub(start).Seconds(), HubWrites: writes1 - writes0}, nil
}

// generations are the works' generations by namespace and name. The key is not Work.Key: building
// 100,000 strings four times a second was half of bench-fleet's CPU while it counted a Component change
// (a CPU profile by --pprof-bind-address).
type generations map[types.NamespacedName]int64

func keyOf(w *fleetsim.Work) types.NamespacedName {
	return types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
}

// rewrites counts the works each calls f with whose generation is not the one before says: the
// expected ones, the others, and when the last of the expected was written at its new generation.
// Written, not Seen: at 100,000 works the API server closes the tracker's watch when it falls behind,
// and once its place has left the watch cache's history the tracker reads every work again, which on
// two busy cores took minutes: it saw the hub's writes long after they were made.
func rewrites(each func(f func(*fleetsim.Work)), before generations, expected func(*fleetsim.Work) bool) (ofExpected, others int, last time.Time) {
	each(func(w *fleetsim.Work) {
		switch {
		case w.Generation == before[keyOf(w)]:
		case !expected(w):
			others++
		default:
			ofExpected++
			if w.Written.After(last) {
				last = w.Written
			}
		}
	})
	return ofExpected, others, last
}

// hubQueues are ferry-hub's controllers a Component change goes through.
var hubQueues = []string{"component-revisions", "appconfigs"}

// hubIdleFor is how long ferry-hub must stay idle to count as done: a reconcile that ends may queue
// the next an instant later.
const hubIdleFor = 500 * time.Millisecond

// waitHubIdle waits until every ferry-hub process has had nothing queued and nothing in progress in
// hubQueues for hubIdleFor.
func (b *bench) waitHubIdle(ctx context.Context) error {
	var idleSince time.Time
	var busy []string
	return b.waitFor(ctx, "ferry-hub to be idle", b.o.timeout, func() string { return "busy: " + strings.Join(busy, ", ") },
		func(ctx context.Context) (bool, error) {
			busy = nil
			for _, h := range b.hubs {
				s, err := h.scrape(ctx)
				if err != nil {
					busy = append(busy, err.Error()) // restarting
					continue
				}
				for _, q := range hubQueues {
					idle, err := s.QueueIdle(q)
					if err != nil {
						return false, fmt.Errorf("%s: %w", h.Name, err)
					}
					if !idle {
						busy = append(busy, fmt.Sprintf("%s %s", h.Name, q))
					}
				}
			}
			switch {
			case len(busy) > 0:
				idleSince = time.Time{}
			case idleSince.IsZero():
				idleSince = time.Now()
			}
			return !idleSince.IsZero() && time.Since(idleSince) >= hubIdleFor, nil
		})
}

// changeOverride changes app-0's override of region-0 (another registry) and counts the works the hub
// rewrites for it: app-0's works on region-0's clusters, and nothing else, is right.
func (b *bench) changeOverride(ctx context.Context) error {
	app := appName(0)
	selected := map[types.NamespacedName]bool{}
	for i, cluster := range b.clusters {
		if fleetsim.RegionOf(i, regions) == fleetsim.RegionOf(0, regions) {
			selected[types.NamespacedName{Namespace: cluster, Name: hub.ManifestWorkName(appConfig(b.o.appNamespace(0), 0))}] = true
		}
	}
	res, err := b.measureRewrites(ctx, fmt.Sprintf("%s's works on region-0", app), len(selected),
		func(w *fleetsim.Work) bool { return selected[keyOf(w)] },
		func(ctx context.Context) error {
			a := &v1alpha2.ApplicationConfiguration{}
			if err := b.client.Get(ctx, types.NamespacedName{Namespace: b.o.appNamespace(0), Name: app}, a); err != nil {
				return err
			}
			a.Spec.Overrides[0] = overrides(0, "mirror")[0]
			if err := b.client.Update(ctx, a); err != nil {
				return fmt.Errorf("change the override of region-0 of AppConfig %s: %w", app, err)
			}
			return nil
		})
	b.res.OverrideChange = res
	return err
}
