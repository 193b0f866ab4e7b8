package main

import (
	"context"
	"fmt"
	"time"

	"github.com/ferry-mc/ferry/internal/testing/fleetsim"
	"github.com/ferry-mc/ferry/pkg/hub"
)

// lagWorks are the works the lag phases degrade and heal: --lag-writes of them, spread evenly over the
// AppConfigs and over each one's clusters, in the order they are written — the AppConfigs in turn,
// so that every summary moves throughout the phase.
func (b *bench) lagWorks() ([]*fleetsim.Work, error) {
	m, n := b.o.appConfigs, b.o.clusters
	perApp := make([][]*fleetsim.Work, m)
	for a := range m {
		k := b.o.lagWrites / m
		if a < b.o.lagWrites%m {
			k++
		}
		name := hub.ManifestWorkName(appConfig(b.o.appNamespace(a), a))
		for j := range k {
			cluster := b.clusters[j*n/k]
			w, ok := b.tracker.Get(cluster, name)
			if !ok {
				return nil, fmt.Errorf("ManifestWork %s/%s is gone", cluster, name)
			}
			perApp[a] = append(perApp[a], w)
		}
	}
	var out []*fleetsim.Work
	for j := 0; len(out) < b.o.lagWrites; j++ {
		for a := range m {
			if j < len(perApp[a]) {
				out = append(out, perApp[a][j])
			}
		}
	}
	return out, nil
}

func (b *bench) degrade(ctx context.Context) error {
	r, err := b.lagPhase(ctx, fleetsim.Degraded)
	b.res.Degrade = r
	return err
}

func (b *bench) heal(ctx context.Context) error {
	r, err := b.lagPhase(ctx, fleetsim.Healthy)
	b.res.Heal = r
	return err
}

// lagPhase writes status h to the lag works at --status-rate and measures how long each write takes
// to show in its AppConfig's summary (see fleetsim.Lags). Degrading takes each AppConfig's healthy
// count down by its share of the works; healing brings it back to N.
func (b *bench) lagPhase(ctx context.Context, h fleetsim.Health) (*LagResult, error) {
	works, err := b.lagWorks()
	if err != nil {
		return nil, err
	}
	down := h == fleetsim.Degraded
	start, final := map[string]int{}, map[string]int{}
	for _, w := range works {
		app := w.Labels[hub.LabelAppConfigName]
		if _, ok := start[app]; !ok {
			o, _ := b.apps.Latest(app)
			start[app], final[app] = o.Healthy, o.Healthy
		}
		if down {
			final[app]--
		} else {
			final[app]++
		}
	}
	agents, err := fleetsim.NewAgents(b.workAPI, fleetsim.AgentOptions{Rate: b.o.statusRate, Concurrency: b.o.agentConcurrency})
	if err != nil {
		return nil, err
	}
	writes0 := hubWrites(ctx, b.hubs)
	first := time.Now()
	stopProgress := b.progress(ctx, func() string { return fmt.Sprintf("%d of %d %s reports written", agents.Written(), len(works), h) })
	acked, err := agents.WriteAll(ctx, works, h)
	stopProgress()
	if err != nil {
		return nil, err
	}
	writes := make([]fleetsim.StatusWrite, len(works))
	var last time.Time
	for i, w := range works {
		writes[i] = fleetsim.StatusWrite{AppConfig: w.Labels[hub.LabelAppConfigName], At: acked[i]}
		if acked[i].After(last) {
			last = acked[i]
		}
	}
	err = b.waitFor(ctx, fmt.Sprintf("every AppConfig's healthy count to reach its end after %d %s reports", len(works), h), b.o.timeout, b.summaries,
		func(context.Context) (bool, error) {
			for app, want := range final {
				if o, _ := b.apps.Latest(app); o.Healthy != want {
					return false, nil
				}
			}
			return true, nil
		})
	if err != nil {
		return nil, err
	}
	history := map[string][]fleetsim.Observation{}
	var settled time.Time
	for app := range start {
		history[app] = b.apps.History(app)
		if o, _ := b.apps.Latest(app); o.At.After(settled) {
			settled = o.At
		}
	}
	lags, err := fleetsim.Lags(writes, start, history, first, down)
	if err != nil {
		return nil, err
	}
	writes1 := hubWrites(ctx, b.hubs)
	return &LagResult{
		Writes: len(works), WriteSeconds: last.Sub(first).Seconds(), Rate: float64(len(works)) / last.Sub(first).Seconds(),
		MedianSeconds: fleetsim.Percentile(lags, 50).Seconds(), P99Seconds: fleetsim.Percentile(lags, 99).Seconds(),
		MaxSeconds: fleetsim.Percentile(lags, 100).Seconds(), LastWriteSeconds: max(0, settled.Sub(last)).Seconds(),
		HubWrites: writes1 - writes0,
	}, nil
}
