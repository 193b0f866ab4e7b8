package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"

	"github.com/ferry-mc/ferry/internal/testing/fleetsim"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
)

// The rollout phases (--rollout) measure a progressive rollout that fails: every AppConfig gets
// spec.rollout (rolloutSpec), then every Component a new image, which the hub is to bring to 1 % of
// the clusters, then 10 %, then the rest. Three clusters of the second stage report the new revision
// Degraded, so the rollout must halt there and roll back. The simulated agents (a fleetsim.Responder)
// answer every generation the hub writes, as ferry-agent does once it has applied it.

// rolloutImage is the image every Component changes to in the rollout phase.
const rolloutImage = "nginx:1.28"

// rolloutSoak is the rollout's minSuccessTime. The agents' reports carry whole seconds (as the API
// stores condition times), and the hub counts the soak from them: a soak of one second may last no
// time at all; two last at least one.
const rolloutSoak = 2 * time.Second

// degradedPerApp is how many clusters of the second stage report the new revision Degraded.
const degradedPerApp = 3

// rolloutSpec is what every AppConfig rolls out under: stages of 1 % and 10 % of the clusters, the rest
// after; no failure tolerated (maxFailures 0); a halted rollout returns to the stable revision.
func rolloutSpec() *v1alpha2.Rollout {
	size := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	return &v1alpha2.Rollout{
		Stages:        []v1alpha2.RolloutStage{{Name: "one-percent", Size: size("1%")}, {Name: "ten-percent", Size: size("10%")}},
		RolloutConfig: v1alpha2.RolloutConfig{MinSuccessTime: &metav1.Duration{Duration: rolloutSoak}},
		OnFailure:     v1alpha2.RolloutFailureRollback,
	}
}

// rolloutStages are the clusters of each stage of spec, as the API documents them: each stage the
// first clusters by name of those no earlier stage took, as many as its size of all the clusters
// (rounded up); the clusters left form the last stage. Computed here, not by the hub's code, to check
// the hub against.
func rolloutStages(spec *v1alpha2.Rollout, clusters []string) ([][]string, error) {
	left := slices.Sorted(slices.Values(clusters))
	var out [][]string
	for _, st := range spec.Stages {
		n, err := intstr.GetScaledValueFromIntOrPercent(st.Size, len(clusters), true)
		if err != nil {
			return nil, fmt.Errorf("stage %s: %w", st.Name, err)
		}
		n = min(n, len(left))
		out, left = append(out, left[:n]), left[n:]
	}
	if len(left) > 0 {
		out = append(out, left)
	}
	return out, nil
}

// spread is k members of s spread evenly over it, from its first (all of s when it has k or fewer).
func spread(s []string, k int) []string {
	if len(s) <= k {
		return slices.Clone(s)
	}
	out := make([]string, k)
	for j := range k {
		out[j] = s[j*len(s)/k]
	}
	return out
}

// rolloutRun is what the rollout phases share.
type rolloutRun struct {
	stages [][]string
	// degraded are the clusters that report the new revision Degraded, in every AppConfig.
	degraded  map[string]bool
	responder *fleetsim.Responder

	mu sync.Mutex
	// stable is each AppConfig's revision (spec hash) when the Components change, on every one of its
	// works; nil before.
	stable map[string]string
}

// health is what a simulated agent reports of w: Degraded for a degraded cluster's work carrying
// another revision than its AppConfig's stable one once the Components changed, Healthy otherwise.
func (r *rolloutRun) health(w *fleetsim.Work) fleetsim.Health {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.stable[w.Labels[hub.LabelAppConfigName]]; ok && r.degraded[w.Namespace] && w.Revision != s {
		return fleetsim.Degraded
	}
	return fleetsim.Healthy
}

func (r *rolloutRun) stableOf(app string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stable[app]
}

// setRollout starts the simulated agents answering every new generation, waits until every work is
// reported on at its generation (app-0's since the Component change), then sets spec.rollout on every
// AppConfig. Their works carry what the AppConfigs render already: the rollout should be Complete at
// once, no work rewritten. Should the hub see a new revision in it all the same, its rollout is let
// run to Complete (every cluster healthy) and the works it rewrote are counted.
func (b *bench) setRollout(ctx context.Context) error {
	stages, err := rolloutStages(rolloutSpec(), b.clusters)
	if err != nil {
		return err
	}
	r := &rolloutRun{stages: stages, degraded: map[string]bool{}}
	for _, c := range spread(stages[1], degradedPerApp) {
		r.degraded[c] = true
	}
	before, err := b.revisions()
	if err != nil {
		return err
	}
	agents, err := fleetsim.NewAgents(b.workAPI, fleetsim.AgentOptions{Rate: b.o.initialRate, Concurrency: b.o.agentConcurrency})
	if err != nil {
		return err
	}
	r.responder = fleetsim.NewResponder(agents, r.health)
	r.responder.Start(ctx, b.tracker)
	b.rolloutRun = r
	if err := b.waitReported(ctx, "every work reported on at its generation"); err != nil {
		return err
	}
	n := b.o.clusters
	if err := b.waitSummaries(ctx, "every AppConfig to show every cluster healthy", func(s fleetsim.Summary) bool { return s.Healthy == n }); err != nil {
		return err
	}

	gens := b.generations()
	writes0 := hubWrites(ctx, b.hubs)
	start := time.Now()
	var mu sync.Mutex
	appGens := map[string]int64{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range b.o.appConfigs {
		g.Go(func() error {
			app := &v1alpha2.ApplicationConfiguration{}
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := b.client.Get(gctx, types.NamespacedName{Namespace: b.o.appNamespace(i), Name: appName(i)}, app); err != nil {
					return err
				}
				app.Spec.Rollout = rolloutSpec()
				return b.client.Update(gctx, app)
			})
			if err != nil {
				return fmt.Errorf("set spec.rollout of AppConfig %s: %w", appName(i), err)
			}
			mu.Lock()
			appGens[app.Name] = app.Generation
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	complete := func(i int, o fleetsim.Observation) bool {
		return o.ObservedGeneration >= appGens[appName(i)] && o.Rollout.Phase == v1alpha2.RolloutComplete &&
			o.Rollout.Revision != "" && o.Rollout.Revision == o.Rollout.StableRevision
	}
	err = b.waitFor(ctx, "every AppConfig to show its rollout Complete", b.o.timeout, b.rollouts,
		func(context.Context) (bool, error) {
			for i := range b.o.appConfigs {
				if o, _ := b.apps.Latest(appName(i)); !complete(i, o) {
					return false, errors.Join(b.apps.Err(), r.responder.Err())
				}
			}
			return true, nil
		})
	if err != nil {
		return err
	}
	if err := b.waitReported(ctx, "every work reported on at its generation"); err != nil {
		return err
	}
	if err := b.waitHubIdle(ctx); err != nil {
		return err
	}
	writes1 := hubWrites(ctx, b.hubs)
	res := &RolloutSpecResult{HubWrites: writes1 - writes0}
	after, err := b.revisions()
	if err != nil {
		return err
	}
	var last time.Time
	for i := range b.o.appConfigs {
		app := appName(i)
		for _, o := range b.apps.History(app) {
			if complete(i, o) {
				last = later(last, o.At)
				if o.Rollout.Revision != hub.AppRevisionName(appConfig(b.o.appNamespace(i), i), after[app]) {
					return fmt.Errorf("AppConfig %s shows revision %s Complete, but its works carry %s", app, o.Rollout.Revision, after[app])
				}
				break
			}
		}
		if after[app] != before[app] {
			res.Revised++
		}
	}
	b.tracker.Range(func(w *fleetsim.Work) {
		if w.Generation != gens[keyOf(w)] {
			res.Rewritten++
		}
	})
	res.Seconds = last.Sub(start).Seconds()
	b.res.RolloutSpec = res
	return nil
}

// revisions is the revision each AppConfig's works carry, all of them the same.
func (b *bench) revisions() (map[string]string, error) {
	out := map[string]string{}
	var mixed []string
	b.tracker.Range(func(w *fleetsim.Work) {
		app := w.Labels[hub.LabelAppConfigName]
		if s, ok := out[app]; ok && s != w.Revision && !slices.Contains(mixed, app) {
			mixed = append(mixed, app)
		}
		out[app] = w.Revision
	})
	if len(mixed) > 0 || len(out) != b.o.appConfigs {
		return nil, fmt.Errorf("want every AppConfig's works on one revision; %d AppConfigs have works, these on several: %v", len(out), mixed)
	}
	return out, nil
}

// generations are every work's generation now.
func (b *bench) generations() generations {
	out := generations{}
	b.tracker.Range(func(w *fleetsim.Work) { out[keyOf(w)] = w.Generation })
	return out
}

// waitReported waits until the simulated agents have reported on every work at its generation.
func (b *bench) waitReported(ctx context.Context, what string) error {
	unreported := func() int {
		n := 0
		b.tracker.Range(func(w *fleetsim.Work) {
			if w.ReportedGeneration != w.Generation {
				n++
			}
		})
		return n
	}
	left := 0
	return b.waitFor(ctx, what, b.o.timeout,
		func() string {
			return fmt.Sprintf("%d works not reported on, %d reports queued or in flight", left, b.rolloutRun.responder.Pending())
		},
		func(context.Context) (bool, error) {
			left = unreported()
			return left == 0, b.rolloutRun.responder.Err()
		})
}

// rollouts says in one line where the AppConfigs' rollouts are.
func (b *bench) rollouts() string {
	var parts []string
	for i := range b.o.appConfigs {
		o, _ := b.apps.Latest(appName(i))
		ro := o.Rollout
		part := fmt.Sprintf("%s %s", appName(i), ro.Phase)
		if ro.Stage != "" {
			part += "/" + ro.Stage
		}
		parts = append(parts, fmt.Sprintf("%s %d updated %d failed", part, ro.Updated, ro.Failed))
	}
	pending := 0
	if b.rolloutRun != nil {
		pending = b.rolloutRun.responder.Pending()
	}
	return fmt.Sprintf("%s; %d reports queued or in flight", strings.Join(parts, ", "), pending)
}

// rollout changes every Component's image under spec.rollout and follows the rollout to its halt in
// the second stage and its rollback, then judges what the hub wrote (audit).
func (b *bench) rollout(ctx context.Context) error {
	r := b.rolloutRun
	if r == nil {
		return fmt.Errorf("spec.rollout was not set")
	}
	stable, err := b.revisions()
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.stable = stable
	r.mu.Unlock()
	history := &revisionHistory{byApp: map[string]map[string][]revisionChange{}}
	cancel := b.tracker.Subscribe(history.record)
	defer cancel()
	writes0 := hubWrites(ctx, b.hubs)
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range b.o.appConfigs {
		g.Go(func() error {
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				c := &v1alpha2.Component{}
				if err := b.client.Get(gctx, types.NamespacedName{Namespace: b.o.appNamespace(i), Name: componentName(i)}, c); err != nil {
					return err
				}
				c.Spec.Workload = component(b.o.appNamespace(i), i, rolloutImage).Spec.Workload
				return b.client.Update(gctx, c)
			})
			if err != nil {
				return fmt.Errorf("change the image of Component %s: %w", componentName(i), err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	// The rollout of another revision than the stable one, in the AppConfig's status.
	rolling := func(i int, o fleetsim.Observation) bool {
		return o.Rollout.Revision != "" && o.Rollout.Revision != hub.AppRevisionName(appConfig(b.o.appNamespace(i), i), stable[appName(i)])
	}
	halted := func(i int, o fleetsim.Observation) bool {
		return rolling(i, o) && (o.Rollout.Halted || o.Rollout.Phase == v1alpha2.RolloutRollingBack || o.Rollout.Phase == v1alpha2.RolloutRolledBack)
	}
	rolledBack := func(i int, o fleetsim.Observation) bool {
		return rolling(i, o) && o.Rollout.Phase == v1alpha2.RolloutRolledBack
	}
	everyApp := func(ok func(int, fleetsim.Observation) bool) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) {
			for i := range b.o.appConfigs {
				if o, _ := b.apps.Latest(appName(i)); !ok(i, o) {
					return false, errors.Join(b.apps.Err(), r.responder.Err())
				}
			}
			return true, nil
		}
	}
	// What happened is judged also when the rollout did not go as it should, up to where it got.
	waitErr := b.waitFor(ctx, "every AppConfig's rollout to halt in the second stage", b.o.timeout, b.rollouts, everyApp(halted))
	if waitErr == nil {
		waitErr = b.waitFor(ctx, "every AppConfig's rollout to be RolledBack", b.o.timeout, b.rollouts, everyApp(rolledBack))
	}
	if waitErr == nil {
		waitErr = b.waitReported(ctx, "every work reported on at its generation after the rollback")
	}
	if waitErr == nil {
		waitErr = b.waitHubIdle(ctx)
	}
	writes1 := hubWrites(context.WithoutCancel(ctx), b.hubs)

	reports := map[string]map[string][]fleetsim.Report{} // by AppConfig, then cluster
	for _, rep := range r.responder.Reports() {
		if rep.Sent.Before(start) {
			continue // the catching up before the rollout
		}
		app := rep.Work.Labels[hub.LabelAppConfigName]
		if reports[app] == nil {
			reports[app] = map[string][]fleetsim.Report{}
		}
		reports[app][rep.Work.Namespace] = append(reports[app][rep.Work.Namespace], rep)
	}
	plan := rolloutPlan{stages: r.stages, soak: rolloutSoak, start: start}
	res := &RolloutResult{Expected: (len(r.stages[0]) + len(r.stages[1])) * b.o.appConfigs, HubWrites: writes1 - writes0}
	b.res.Rollout = res
	for _, s := range r.stages {
		res.StageClusters = append(res.StageClusters, len(s))
	}
	res.Degraded = slices.Sorted(maps.Keys(r.degraded))
	res.HubWritesPerCluster = res.HubWrites / float64(b.o.clusters)
	var halts, rollbacks, shown []time.Duration
	var batchStart, batchEnd, last time.Time
	var problems []error
	for i := range b.o.appConfigs {
		app := appName(i)
		seen, relapsed := rolloutSeen{}, false
		for _, o := range b.apps.History(app) {
			switch {
			case seen.halted.IsZero() && halted(i, o):
				seen.halted = o.At
			case !seen.halted.IsZero() && rolling(i, o) && !halted(i, o):
				relapsed = true // the halt forgotten
			}
			if seen.rolledBack.IsZero() && rolledBack(i, o) {
				seen.rolledBack = o.At
			}
		}
		if relapsed {
			res.HaltsLost++
		}
		a := plan.audit(appRollout{stable: stable[app], changes: history.of(app), reports: reports[app], rolloutSeen: seen})
		res.Changed += a.changed
		res.Rewrites += a.rewrites
		res.OutOfStage += len(a.violations)
		for _, v := range a.violations {
			if len(res.Violations) < v1alpha2.MaxClustersListed {
				res.Violations = append(res.Violations, app+": "+v)
			}
		}
		for _, c := range r.stages[1] {
			for _, rep := range reports[app][c] {
				if rep.Work.Revision != stable[app] {
					res.BatchReports++
					batchStart, batchEnd = earlier(batchStart, rep.Sent), later(batchEnd, rep.Acked)
				}
			}
		}
		switch {
		case seen.halted.IsZero():
			continue // the wait says why
		case a.firstDegraded.IsZero():
			problems = append(problems, fmt.Errorf("AppConfig %s halted with no Degraded report written", app))
			continue
		}
		halts = append(halts, max(0, seen.halted.Sub(a.firstDegraded)))
		if seen.rolledBack.IsZero() {
			continue
		}
		if len(a.notBack) > 0 {
			problems = append(problems, fmt.Errorf("AppConfig %s shows RolledBack, but these works are not back on the stable revision with a healthy report: %s",
				app, strings.Join(a.notBack, ", ")))
			continue
		}
		res.RolledBack++
		rollbacks = append(rollbacks, max(0, a.backHealthy.Sub(a.firstDegraded)))
		shown = append(shown, max(0, seen.rolledBack.Sub(a.firstDegraded)))
		last = later(last, seen.rolledBack)
	}
	slices.Sort(halts)
	slices.Sort(rollbacks)
	slices.Sort(shown)
	res.Halted = len(halts)
	res.HaltMedianSeconds, res.HaltP99Seconds, res.HaltMaxSeconds = percentiles(halts)
	res.RollbackMedianSeconds, res.RollbackP99Seconds, res.RollbackMaxSeconds = percentiles(rollbacks)
	res.RolledBackMedianSeconds, _, res.RolledBackMaxSeconds = percentiles(shown)
	res.BatchSeconds = batchEnd.Sub(batchStart).Seconds()
	if res.RolledBack == b.o.appConfigs {
		res.Seconds = last.Sub(start).Seconds()
	}
	return errors.Join(append([]error{waitErr}, problems...)...)
}

// percentiles are the median, p99 and maximum of sorted durations, in seconds.
func percentiles(sorted []time.Duration) (median, p99, most float64) {
	return fleetsim.Percentile(sorted, 50).Seconds(), fleetsim.Percentile(sorted, 99).Seconds(), fleetsim.Percentile(sorted, 100).Seconds()
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// earlier is the earlier of a and b, the zero time meaning none.
func earlier(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// revisionChange is a work taking a revision: the first version of it the tracker saw with that
// revision.
type revisionChange struct {
	revision   string
	generation int64
	// seen is when the tracker saw it; written when the API server recorded the write (whole
	// seconds): the hub wrote it before seen and less than a second after written.
	seen, written time.Time
}

// revisionHistory records the revisions every work takes, by AppConfig and cluster, from what the
// work tracker sees: its subscription sees every version of every work the watch delivers.
type revisionHistory struct {
	mu    sync.Mutex
	byApp map[string]map[string][]revisionChange
}

func (h *revisionHistory) record(w *fleetsim.Work) {
	app := w.Labels[hub.LabelAppConfigName]
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byApp[app] == nil {
		h.byApp[app] = map[string][]revisionChange{}
	}
	changes := h.byApp[app][w.Namespace]
	if n := len(changes); n > 0 && changes[n-1].revision == w.Revision {
		return
	}
	h.byApp[app][w.Namespace] = append(changes, revisionChange{revision: w.Revision, generation: w.Generation, seen: w.Seen, written: w.Written})
}

// of is the revisions each cluster's work of app took, in order.
func (h *revisionHistory) of(app string) map[string][]revisionChange {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string][]revisionChange, len(h.byApp[app]))
	for c, changes := range h.byApp[app] {
		out[c] = slices.Clone(changes)
	}
	return out
}

// rolloutPlan is the rollout every AppConfig went through: its stages, its soak (minSuccessTime), and
// when the change began.
type rolloutPlan struct {
	stages [][]string
	soak   time.Duration
	start  time.Time
}

// rolloutSeen is when the AppConfig's status was first seen halted (RolloutHalted, or rolling back)
// and RolledBack; zero when it was not.
type rolloutSeen struct{ halted, rolledBack time.Time }

// appRollout is what the benchmark saw of one AppConfig's rollout.
type appRollout struct {
	// stable is the revision before the rollout; any other one is new.
	stable string
	// changes are the revisions each cluster's work took, the first the one it had at the start.
	changes map[string][]revisionChange
	// reports are the simulated agents' reports on each cluster's work, in the order acknowledged.
	reports map[string][]fleetsim.Report
	rolloutSeen
}

// appAudit is the verdict on one AppConfig's rollout.
type appAudit struct {
	// violations are the works that took the new revision when their stage's turn had not come: why.
	violations []string
	// changed counts the clusters whose work took the new revision; rewrites the works' changes of
	// revision, forward and back.
	changed, rewrites int
	// firstDegraded is when the first Degraded report on the new revision was acknowledged.
	firstDegraded time.Time
	// backHealthy is when the last changed cluster's healthy report on the stable revision, at the
	// work's last generation, was acknowledged; notBack the changed clusters that have none.
	backHealthy time.Time
	notBack     []string
}

// audit judges what the hub wrote for one AppConfig. A cluster of stage k may take the new revision
// only once every earlier stage has passed: each of its clusters Healthy on the new revision for the
// soak. A stage with a cluster Degraded on it never passes (maxFailures 0: the rollout halts), and
// once the AppConfig shows the halt no work may take the new revision at all.
//
// Only what the hub cannot have done in its right is counted, by the clocks of this process: a stage
// passed no earlier than its last cluster's healthy report was sent, nor than the soak after the
// transition time it carries (the hub counts from that); the hub wrote a work before the tracker saw
// it and less than a second after the API server's record of the write (whole seconds); a write
// recorded at or after the halt was seen (on the AppConfig, or as a work's rollback) was made after
// it, and so was a work's new revision that follows its own rollback.
func (p rolloutPlan) audit(a appRollout) appAudit {
	var out appAudit
	for _, reps := range a.reports {
		for _, rep := range reps {
			if rep.Health == fleetsim.Degraded && rep.Work.Revision != a.stable {
				out.firstDegraded = earlier(out.firstDegraded, rep.Acked)
			}
		}
	}
	// The hub had halted once a work went back to the stable revision (a rollback): the first such
	// write, as seen, is as good a mark of the halt as the AppConfig's status.
	halted := a.halted
	for _, changes := range a.changes {
		for i := 1; i < len(changes); i++ {
			if changes[i].revision == a.stable && changes[i-1].revision != a.stable {
				halted = earlier(halted, changes[i].seen)
			}
		}
	}
	// from is when the stage being looked at may start; never once an earlier stage never passed.
	from, never, blocker := p.start, false, ""
	for k, members := range p.stages {
		if k > 0 && !never {
			passed, ok, why := p.passed(p.stages[k-1], a)
			if ok {
				from = later(from, passed)
			} else {
				never, blocker = true, why
			}
		}
		for _, c := range members {
			changes := a.changes[c]
			changed, rolledBack := false, false
			for _, ch := range changes[min(1, len(changes)):] {
				out.rewrites++
				if ch.revision == a.stable {
					rolledBack = rolledBack || changed
					continue
				}
				changed = true
				by := ch.seen // the latest it can have been written
				if !ch.written.IsZero() && ch.written.Add(time.Second).Before(by) {
					by = ch.written.Add(time.Second)
				}
				what := fmt.Sprintf("cluster %s (stage %d) took revision %s at generation %d", c, k+1, ch.revision, ch.generation)
				switch {
				case never:
					out.violations = append(out.violations, fmt.Sprintf("%s, but stage %d never passed: %s", what, k, blocker))
				case !by.After(from):
					out.violations = append(out.violations, fmt.Sprintf("%s before %s, when its turn came no earlier than %s",
						what, by.Format(time.StampMilli), from.Format(time.StampMilli)))
				case rolledBack:
					out.violations = append(out.violations, what+" again, after the rollback had returned it to the stable revision")
				case !halted.IsZero() && !ch.written.Before(halted):
					out.violations = append(out.violations, fmt.Sprintf("%s at %s, after the halt was seen at %s",
						what, ch.written.Format(time.Stamp), halted.Format(time.StampMilli)))
				}
			}
			if !changed {
				continue
			}
			out.changed++
			back, ok := backHealthy(changes[len(changes)-1], a.reports[c], a.stable)
			if !ok {
				out.notBack = append(out.notBack, c)
				continue
			}
			out.backHealthy = later(out.backHealthy, back)
		}
	}
	return out
}

// passed is the earliest the hub could have found every cluster of stage healthy on the new revision
// for the soak, by the reports on them; not ok, with why, when one was not or was Degraded.
func (p rolloutPlan) passed(stage []string, a appRollout) (at time.Time, ok bool, why string) {
	for _, c := range stage {
		succeeded := time.Time{}
		for _, rep := range a.reports[c] {
			if rep.Work.Revision == a.stable {
				continue
			}
			if rep.Health == fleetsim.Degraded {
				return time.Time{}, false, fmt.Sprintf("cluster %s reported the new revision Degraded", c)
			}
			succeeded = later(rep.Sent, rep.Transition.Add(p.soak))
			break
		}
		if succeeded.IsZero() {
			return time.Time{}, false, fmt.Sprintf("cluster %s never reported the new revision Healthy", c)
		}
		at = later(at, succeeded)
	}
	return at, true, ""
}

// backHealthy is when the healthy report on last — a work's last revision, which must be stable — or
// a later generation of it was acknowledged.
func backHealthy(last revisionChange, reports []fleetsim.Report, stable string) (time.Time, bool) {
	if last.revision != stable {
		return time.Time{}, false
	}
	for _, rep := range reports {
		if rep.Work.Revision == stable && rep.Work.Generation >= last.generation && rep.Health == fleetsim.Healthy {
			return rep.Acked, true
		}
	}
	return time.Time{}, false
}
