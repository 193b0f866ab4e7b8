package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mc/ferry/internal/testing/fleetsim"
)

// The stages are 1 % and 10 % of all the clusters, rounded up, then the rest, taken by name.
func TestRolloutStagesTakeClustersByName(t *testing.T) {
	for _, tc := range []struct {
		clusters int
		want     []int
	}{{1000, []int{10, 100, 890}}, {10000, []int{100, 1000, 8900}}, {40, []int{1, 4, 35}}, {2, []int{1, 1}}} {
		names := make([]string, tc.clusters)
		for i := range names {
			names[len(names)-1-i] = fleetsim.ClusterName("", i) // in reverse: the order given does not count
		}
		stages, err := rolloutStages(rolloutSpec(), names)
		if err != nil {
			t.Fatal(err)
		}
		var sizes []int
		var all []string
		for _, s := range stages {
			sizes = append(sizes, len(s))
			all = append(all, s...)
		}
		if !slices.Equal(sizes, tc.want) || !slices.IsSorted(all) || len(all) != tc.clusters {
			t.Errorf("%d clusters: stages of %v, in name order %t; want %v", tc.clusters, sizes, slices.IsSorted(all), tc.want)
		}
	}
	if got := spread([]string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, 3); !slices.Equal(got, []string{"a", "d", "g"}) {
		t.Errorf("spread = %v, want a, d, g", got)
	}
}

// The audit counts a work that took the new revision out of turn — before the stage before it had
// passed, in a stage after one that failed, after the halt, or again after its rollback — and only
// what the clocks prove: a write the tracker saw late, but recorded in time, is not counted.
func TestAuditCountsOnlyWhatTheHubCannotHaveDone(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	change := func(rev string, gen int64, seenMS, writtenS int) revisionChange {
		return revisionChange{revision: rev, generation: gen, seen: at(seenMS), written: t0.Add(time.Duration(writtenS) * time.Second)}
	}
	report := func(cluster, rev string, gen int64, h fleetsim.Health, sentMS int) fleetsim.Report {
		w := &fleetsim.Work{Revision: rev}
		w.Namespace, w.Generation = cluster, gen
		return fleetsim.Report{Work: w, Health: h, Sent: at(sentMS), Transition: at(sentMS).Truncate(time.Second), Acked: at(sentMS + 20)}
	}
	plan := rolloutPlan{stages: [][]string{{"a"}, {"b", "c"}, {"d"}}, soak: 2 * time.Second, start: t0}
	// A rollout as it should go: a changes and is healthy from 1.2s (transition 1s: passed at 3s); b
	// and c change at 3.5s, c is Degraded; the hub halts and rolls a, b and c back.
	good := func() appRollout {
		return appRollout{
			stable: "old",
			changes: map[string][]revisionChange{
				"a": {change("old", 1, -9000, -9), change("new", 2, 300, 0), change("old", 3, 4400, 4)},
				"b": {change("old", 1, -9000, -9), change("new", 2, 3500, 3), change("old", 3, 4400, 4)},
				"c": {change("old", 1, -9000, -9), change("new", 2, 3500, 3), change("old", 3, 4400, 4)},
				"d": {change("old", 1, -9000, -9)},
			},
			reports: map[string][]fleetsim.Report{
				"a": {report("a", "new", 2, fleetsim.Healthy, 1200), report("a", "old", 3, fleetsim.Healthy, 4500)},
				"b": {report("b", "new", 2, fleetsim.Healthy, 3600), report("b", "old", 3, fleetsim.Healthy, 4500)},
				"c": {report("c", "new", 2, fleetsim.Degraded, 3700), report("c", "old", 3, fleetsim.Healthy, 4600)},
			},
			rolloutSeen: rolloutSeen{halted: at(4500), rolledBack: at(4800)},
		}
	}
	got := plan.audit(good())
	if len(got.violations) != 0 || got.changed != 3 || got.rewrites != 6 || !got.firstDegraded.Equal(at(3720)) ||
		!got.backHealthy.Equal(at(4620)) || len(got.notBack) != 0 {
		t.Errorf("a rollout as it should go: %+v", got)
	}

	for name, tc := range map[string]struct {
		edit func(*appRollout)
		want string
	}{
		"before the stage before passed": {func(a *appRollout) { a.changes["b"][1] = change("new", 2, 2900, 2) }, "cluster b (stage 2) took revision new at generation 2 before"},
		// Seen at 9.9s, but the API server recorded the write at 1s: made before 2s, before a passed.
		"recorded before the stage before passed": {func(a *appRollout) { a.changes["b"][1] = change("new", 2, 9900, 1) }, "cluster b (stage 2)"},
		"after a failed stage": {func(a *appRollout) {
			a.changes["d"] = append(a.changes["d"], change("new", 2, 3600, 3), change("old", 3, 4400, 4))
		}, "cluster d (stage 3) took revision new at generation 2, but stage 2 never passed: cluster c reported the new revision Degraded"},
		"again after its rollback": {func(a *appRollout) {
			a.changes["a"] = append(a.changes["a"], change("new", 4, 4450, 4), change("old", 5, 4700, 4))
		}, "cluster a (stage 1) took revision new at generation 4 again, after the rollback"},
		"recorded after the halt": {func(a *appRollout) {
			a.changes["b"][1] = change("new", 2, 5200, 5)
			a.changes["b"][2] = change("old", 3, 5400, 5)
			a.halted = at(4900)
		}, "after the halt was seen"},
	} {
		a := good()
		tc.edit(&a)
		got := plan.audit(a)
		if len(got.violations) != 1 || !strings.Contains(got.violations[0], tc.want) {
			t.Errorf("%s: violations %q; want one saying %q", name, got.violations, tc.want)
		}
	}

	// A cluster the hub did not return to the stable revision, or whose return was not reported on.
	a := good()
	a.changes["b"] = a.changes["b"][:2]
	delete(a.reports, "c")
	a.reports["c"] = []fleetsim.Report{report("c", "new", 2, fleetsim.Degraded, 3700)}
	if got := plan.audit(a); !slices.Equal(got.notBack, []string{"b", "c"}) && !slices.Equal(got.notBack, []string{"c", "b"}) {
		t.Errorf("not back: %v; want b and c", got.notBack)
	}
}

// A simulated agent reports Degraded only on a degraded cluster's work that carries another revision
// than its AppConfig's stable one, and only once the stable revisions are known.
func TestRolloutHealth(t *testing.T) {
	r := &rolloutRun{degraded: map[string]bool{"sick": true}}
	work := func(cluster, rev string) *fleetsim.Work {
		w := &fleetsim.Work{Revision: rev}
		w.Namespace, w.Labels = cluster, map[string]string{"ferry.io/appconfig-name": "app-0"}
		return w
	}
	if h := r.health(work("sick", "new")); h != fleetsim.Healthy {
		t.Errorf("before the Components change: %s, want healthy", h)
	}
	r.stable = map[string]string{"app-0": "old"}
	for _, tc := range []struct {
		cluster, rev string
		want         fleetsim.Health
	}{{"sick", "new", fleetsim.Degraded}, {"sick", "old", fleetsim.Healthy}, {"well", "new", fleetsim.Healthy}} {
		if h := r.health(work(tc.cluster, tc.rev)); h != tc.want {
			t.Errorf("%s on %s: %s, want %s", tc.rev, tc.cluster, h, tc.want)
		}
	}
}
