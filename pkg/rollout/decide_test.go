package rollout

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// fleet is n reachable clusters c1..cn, each Healthy on revision rev since long before t0.
func fleet(n int, rev string) []Cluster {
	out := make([]Cluster, n)
	for i := range out {
		out[i] = Cluster{Name: "c" + string(rune('0'+i+1)), Reachable: true, Revision: rev, UpdatedAt: t0.Add(-time.Hour),
			Reported: true, Health: v1alpha2.Healthy, HealthySince: t0.Add(-time.Hour)}
	}
	return out
}

// at puts cluster name on revision rev, updated at `updated`, with the given report.
func at(cs []Cluster, name, rev string, updated time.Time, reported bool, h v1alpha2.Health, healthySince time.Time) []Cluster {
	out := append([]Cluster(nil), cs...)
	for i := range out {
		if out[i].Name == name {
			out[i].Revision, out[i].UpdatedAt, out[i].Reported, out[i].Health, out[i].HealthySince = rev, updated, reported, h, healthySince
		}
	}
	return out
}

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
func count(n int) *intstr.IntOrString      { v := intstr.FromInt32(int32(n)); return &v }
func pct(s string) *intstr.IntOrString     { v := intstr.FromString(s); return &v }

// canary: c1 first, then the rest two at a time, each healthy for a minute.
var canary = v1alpha2.Rollout{
	Stages:        []v1alpha2.RolloutStage{{Name: "canary", Clusters: []string{"c1"}}},
	RolloutConfig: v1alpha2.RolloutConfig{MaxConcurrency: count(2), MinSuccessTime: dur(time.Minute)},
}

func withSpec(spec v1alpha2.Rollout, change func(*v1alpha2.Rollout)) v1alpha2.Rollout {
	change(&spec)
	return spec
}

func TestDecide(t *testing.T) {
	healthyAtR2 := func(cs []Cluster, names ...string) []Cluster {
		for _, n := range names {
			cs = at(cs, n, "r2", t0.Add(-10*time.Minute), true, v1alpha2.Healthy, t0.Add(-9*time.Minute))
		}
		return cs
	}
	cases := []struct {
		name string
		in   Input
		// want: each cluster's revision, the phase, the stage; failures by cluster:reason
		want      map[string]string
		phase     v1alpha2.RolloutPhase
		stage     string
		failures  []string
		stable    string
		recheck   time.Duration
		wantError string
	}{{
		name:  "nothing to roll out: every cluster, a new one too, carries the stable revision",
		in:    Input{Spec: canary, Revision: "r1", Stable: "r1", Clusters: append(fleet(2, "r1"), Cluster{Name: "new", Reachable: true})},
		want:  map[string]string{"c1": "r1", "c2": "r1", "new": "r1"},
		phase: v1alpha2.RolloutComplete, stable: "r1",
	}, {
		name:  "a new revision goes to the canary only",
		in:    Input{Spec: canary, Revision: "r2", Stable: "r1", Clusters: fleet(4, "r1")},
		want:  map[string]string{"c1": "r2", "c2": "r1", "c3": "r1", "c4": "r1"},
		phase: v1alpha2.RolloutProgressing, stage: "canary", stable: "r1",
	}, {
		name:  "a canary the agent has not reported on yet holds the rest",
		in:    Input{Spec: canary, Revision: "r2", Stable: "r1", Clusters: at(fleet(4, "r1"), "c1", "r2", t0, false, "", time.Time{})},
		want:  map[string]string{"c1": "r2", "c2": "r1", "c3": "r1", "c4": "r1"},
		phase: v1alpha2.RolloutProgressing, stage: "canary", stable: "r1",
	}, {
		name: "a stale report (about the work's earlier generation) never counts as success",
		in: Input{Spec: canary, Revision: "r2", Stable: "r1",
			Clusters: at(fleet(4, "r1"), "c1", "r2", t0.Add(-time.Hour), false, v1alpha2.Healthy, t0.Add(-2*time.Hour))},
		want:  map[string]string{"c1": "r2", "c2": "r1", "c3": "r1", "c4": "r1"},
		phase: v1alpha2.RolloutProgressing, stage: "canary", stable: "r1",
	}, {
		name: "a canary healthy for less than minSuccessTime soaks; the decision is due again when the soak ends",
		in: Input{Spec: canary, Revision: "r2", Stable: "r1",
			Clusters: at(fleet(4, "r1"), "c1", "r2", t0.Add(-30*time.Second), true, v1alpha2.Healthy, t0.Add(-20*time.Second))},
		want:  map[string]string{"c1": "r2", "c2": "r1", "c3": "r1", "c4": "r1"},
		phase: v1alpha2.RolloutProgressing, stage: "canary", stable: "r1", recheck: 40 * time.Second,
	}, {
		name: "the soak counts from the update when the object was healthy before it",
		in: Input{Spec: canary, Revision: "r2", Stable: "r1",
			Clusters: at(fleet(4, "r1"), "c1", "r2", t0.Add(-10*time.Second), true, v1alpha2.Healthy, t0.Add(-time.Hour))},
		want:  map[string]string{"c1": "r2", "c2": "r1", "c3": "r1", "c4": "r1"},
		phase: v1alpha2.RolloutProgressing, stage: "canary", stable: "r1", recheck: 50 * time.Second,
	}, {
		name:  "a canary that succeeded lets the next stage go, two at a time",
		in:    Input{Spec: canary, Revision: "r2", Stable: "r1", Clusters: healthyAtR2(fleet(5, "r1"), "c1")},
		want:  map[string]string{"c1": "r2", "c2": "r2", "c3": "r2", "c4": "r1", "c5": "r1"},
		phase: v1alpha2.RolloutProgressing, stage: RemainingStage, stable: "r1",
	}, {
		name: "two changing clusters fill the stage: nothing more moves",
		in: Input{Spec: canary, Revision: "r2", Stable: "r1",
			Clusters: at(at(healthyAtR2(fleet(5, "r1"), "c1"), "c2", "r2", t0, false, "", time.Time{}), "c3", "r2", t0, true, v1alpha2.Progressing, time.Time{})},
		want:  map[string]string{"c1": "r2", "c2": "r2", "c3": "r2", "c4": "r1", "c5": "r1"},
		phase: v1alpha2.RolloutProgressing, stage: RemainingStage, stable: "r1",
	}, {
		name:  "every cluster succeeded: complete, and the revision is the stable one",
		in:    Input{Spec: canary, Revision: "r2", Stable: "r1", Clusters: healthyAtR2(fleet(3, "r1"), "c1", "c2", "c3")},
		want:  map[string]string{"c1": "r2", "c2": "r2", "c3": "r2"},
		phase: v1alpha2.RolloutComplete, stable: "r2",
	}, {
		name: "a Degraded canary halts the rollout, even while still Progressing; with Pause everything stays",
		in: Input{Spec: canary, Revision: "r2", Stable: "r1",
			Clusters: at(fleet(3, "r1"), "c1", "r2", t0.Add(-time.Minute), true, v1alpha2.Degraded, time.Time{})},
		want:  map[string]string{"c1": "r2", "c2": "r1", "c3": "r1"},
		phase: v1alpha2.RolloutHalted, failures: []string{"c1:Degraded"}, stable: "r1",
	}, {
		name: "with Rollback a halt returns every cluster to the stable revision",
		in: Input{Spec: withSpec(canary, func(r *v1alpha2.Rollout) { r.OnFailure = v1alpha2.RolloutFailureRollback }), Revision: "r2", Stable: "r1",
			Clusters: at(fleet(3, "r1"), "c1", "r2", t0.Add(-time.Minute), true, v1alpha2.Degraded, time.Time{})},
		want:  map[string]string{"c1": "r1", "c2": "r1", "c3": "r1"},
		phase: v1alpha2.RolloutRollingBack, failures: []string{"c1:Degraded"}, stable: "r1",
	}, {
		name: "rolled back once every cluster reports the stable revision healthy; the halt stays",
		in: Input{Spec: withSpec(canary, func(r *v1alpha2.Rollout) { r.OnFailure = v1alpha2.RolloutFailureRollback }), Revision: "r2", Stable: "r1",
			Clusters: fleet(3, "r1"), Halted: true},
		want:  map[string]string{"c1": "r1", "c2": "r1", "c3": "r1"},
		phase: v1alpha2.RolloutRolledBack, stable: "r1",
	}, {
		name:  "a halt is remembered: a recovered canary does not restart the rollout",
		in:    Input{Spec: canary, Revision: "r2", Stable: "r1", Clusters: healthyAtR2(fleet(3, "r1"), "c1"), Halted: true},
		want:  map[string]string{"c1": "r2", "c2": "r1", "c3": "r1"},
		phase: v1alpha2.RolloutHalted, stable: "r1",
	}, {
		name: "within maxFailures a failed cluster is left behind and the rollout goes on",
		in: Input{Spec: withSpec(canary, func(r *v1alpha2.Rollout) { r.MaxFailures = count(1) }), Revision: "r2", Stable: "r1",
			Clusters: at(fleet(4, "r1"), "c1", "r2", t0.Add(-time.Minute), true, v1alpha2.Degraded, time.Time{})},
		want:  map[string]string{"c1": "r2", "c2": "r2", "c3": "r2", "c4": "r1"},
		phase: v1alpha2.RolloutProgressing, stage: RemainingStage, failures: []string{"c1:Degraded"}, stable: "r1",
	}, {
		name: "not Healthy by progressDeadline is a failure",
		in: Input{Spec: withSpec(canary, func(r *v1alpha2.Rollout) { r.ProgressDeadline = dur(5 * time.Minute) }), Revision: "r2", Stable: "r1",
			Clusters: at(fleet(3, "r1"), "c1", "r2", t0.Add(-6*time.Minute), true, v1alpha2.Progressing, time.Time{})},
		want:  map[string]string{"c1": "r2", "c2": "r1", "c3": "r1"},
		phase: v1alpha2.RolloutHalted, failures: []string{"c1:ProgressDeadlineExceeded"}, stable: "r1",
	}, {
		name: "before progressDeadline the decision is due again when it passes",
		in: Input{Spec: withSpec(canary, func(r *v1alpha2.Rollout) { r.ProgressDeadline = dur(5 * time.Minute) }), Revision: "r2", Stable: "r1",
			Clusters: at(fleet(3, "r1"), "c1", "r2", t0.Add(-4*time.Minute), false, "", time.Time{})},
		want:  map[string]string{"c1": "r2", "c2": "r1", "c3": "r1"},
		phase: v1alpha2.RolloutProgressing, stage: "canary", stable: "r1", recheck: time.Minute,
	}, {
		name:  "paused: nothing moves",
		in:    Input{Spec: withSpec(canary, func(r *v1alpha2.Rollout) { r.Paused = true }), Revision: "r2", Stable: "r1", Clusters: healthyAtR2(fleet(3, "r1"), "c1")},
		want:  map[string]string{"c1": "r2", "c2": "r1", "c3": "r1"},
		phase: v1alpha2.RolloutPaused, stage: RemainingStage, stable: "r1",
	}, {
		name: "a stage that requires approval waits for it",
		in: Input{Spec: v1alpha2.Rollout{Stages: []v1alpha2.RolloutStage{{Name: "canary", Clusters: []string{"c1"}}, {Name: "prod", RequireApproval: true}}},
			Revision: "r2", Stable: "r1", Clusters: healthyAtR2(fleet(3, "r1"), "c1")},
		want:  map[string]string{"c1": "r2", "c2": "r1", "c3": "r1"},
		phase: v1alpha2.RolloutWaitingForApproval, stage: "prod", stable: "r1",
	}, {
		name: "an approved stage goes",
		in: Input{Spec: v1alpha2.Rollout{Stages: []v1alpha2.RolloutStage{{Name: "canary", Clusters: []string{"c1"}}, {Name: "prod", RequireApproval: true}}},
			Revision: "r2", Stable: "r1", Clusters: healthyAtR2(fleet(3, "r1"), "c1"), Approved: []string{"prod"}},
		want:  map[string]string{"c1": "r2", "c2": "r2", "c3": "r2"},
		phase: v1alpha2.RolloutProgressing, stage: "prod", stable: "r1",
	}, {
		name: "stages by percentage of all clusters, rounded up, and by selector",
		in: Input{Spec: v1alpha2.Rollout{Stages: []v1alpha2.RolloutStage{
			{Name: "edge", ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "edge"}}},
			{Name: "ten", Size: pct("10%")},
		}}, Revision: "r2", Stable: "r1", Clusters: labelled(fleet(9, "r1"), "c9", "tier", "edge")},
		want:  map[string]string{"c1": "r1", "c2": "r1", "c3": "r1", "c4": "r1", "c5": "r1", "c6": "r1", "c7": "r1", "c8": "r1", "c9": "r2"},
		phase: v1alpha2.RolloutProgressing, stage: "edge", stable: "r1",
	}, {
		name: "after the selected stage, 10% of 9 clusters is one",
		in: Input{Spec: v1alpha2.Rollout{Stages: []v1alpha2.RolloutStage{
			{Name: "edge", ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "edge"}}},
			{Name: "ten", Size: pct("10%")},
		}}, Revision: "r2", Stable: "r1", Clusters: healthyAtR2(labelled(fleet(9, "r1"), "c9", "tier", "edge"), "c9")},
		want:  map[string]string{"c1": "r2", "c2": "r1", "c3": "r1", "c4": "r1", "c5": "r1", "c6": "r1", "c7": "r1", "c8": "r1", "c9": "r2"},
		phase: v1alpha2.RolloutProgressing, stage: "ten", stable: "r1",
	}, {
		name: "a cluster placed mid-rollout waits on the stable revision for its stage",
		in: Input{Spec: withSpec(canary, func(r *v1alpha2.Rollout) { r.MaxConcurrency = count(1) }), Revision: "r2", Stable: "r1",
			Clusters: append(fleet(3, "r1"), Cluster{Name: "c9", Reachable: true})},
		want:  map[string]string{"c1": "r2", "c2": "r1", "c3": "r1", "c9": "r1"},
		phase: v1alpha2.RolloutProgressing, stage: "canary", stable: "r1",
	}, {
		name:  "before the first rollout completes, clusters whose stage has not come get no work",
		in:    Input{Spec: canary, Revision: "r1", Stable: "", Clusters: []Cluster{{Name: "c1", Reachable: true}, {Name: "c2", Reachable: true}}},
		want:  map[string]string{"c1": "r1", "c2": ""},
		phase: v1alpha2.RolloutProgressing, stage: "canary", stable: "",
	}, {
		name:  "an unreachable canary is waited for (Wait, the default)",
		in:    Input{Spec: canary, Revision: "r2", Stable: "r1", Clusters: unreachable(at(fleet(3, "r1"), "c1", "r2", t0, false, "", time.Time{}), "c1")},
		want:  map[string]string{"c1": "r2", "c2": "r1", "c3": "r1"},
		phase: v1alpha2.RolloutProgressing, stage: "canary", stable: "r1",
	}, {
		name: "an unreachable canary is skipped under Skip: it gets the revision and the rollout goes on",
		in: Input{Spec: withSpec(canary, func(r *v1alpha2.Rollout) { r.UnreachableClusters = v1alpha2.UnreachableSkip }), Revision: "r2", Stable: "r1",
			Clusters: unreachable(fleet(3, "r1"), "c1")},
		want:  map[string]string{"c1": "r2", "c2": "r2", "c3": "r2"},
		phase: v1alpha2.RolloutProgressing, stage: RemainingStage, stable: "r1",
	}, {
		name: "an unreachable canary fails under Fail",
		in: Input{Spec: withSpec(canary, func(r *v1alpha2.Rollout) { r.UnreachableClusters = v1alpha2.UnreachableFail }), Revision: "r2", Stable: "r1",
			Clusters: unreachable(fleet(3, "r1"), "c1")},
		want:  map[string]string{"c1": "r1", "c2": "r1", "c3": "r1"},
		phase: v1alpha2.RolloutHalted, failures: []string{"c1:ClusterUnreachable"}, stable: "r1",
	}, {
		name:      "two stages of one name are refused",
		in:        Input{Spec: v1alpha2.Rollout{Stages: []v1alpha2.RolloutStage{{Name: "a"}, {Name: "a"}}}, Revision: "r2", Stable: "r1", Clusters: fleet(2, "r1")},
		wantError: "a stage needs a name of its own",
	}, {
		name:      "a size that is neither a count nor a percentage is refused",
		in:        Input{Spec: v1alpha2.Rollout{Stages: []v1alpha2.RolloutStage{{Name: "a", Size: pct("half")}}}, Revision: "r2", Stable: "r1", Clusters: fleet(2, "r1")},
		wantError: `stages[0] (a): size "half": want a count or a percentage`,
	}, {
		name:      "a maxConcurrency that lets no cluster change is refused",
		in:        Input{Spec: v1alpha2.Rollout{RolloutConfig: v1alpha2.RolloutConfig{MaxConcurrency: count(0)}}, Revision: "r2", Stable: "r1", Clusters: fleet(2, "r1")},
		wantError: "maxConcurrency 0 lets no cluster change",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.in.Now = t0
			d, err := Decide(c.in)
			if c.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantError) {
					t.Fatalf("error %v, want one saying %q", err, c.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(d.Revisions, c.want) {
				t.Errorf("revisions %v, want %v", d.Revisions, c.want)
			}
			var failures []string
			for _, f := range d.Failures {
				failures = append(failures, f.Cluster+":"+f.Reason)
			}
			if d.Phase != c.phase || d.Stage != c.stage || d.Stable != c.stable || strings.Join(failures, ",") != strings.Join(c.failures, ",") || d.RecheckAfter != c.recheck {
				t.Errorf("phase %s, stage %q, stable %q, failures %v, recheck %s; want %s, %q, %q, %v, %s",
					d.Phase, d.Stage, d.Stable, failures, d.RecheckAfter, c.phase, c.stage, c.stable, c.failures, c.recheck)
			}
		})
	}
}

func labelled(cs []Cluster, name, key, value string) []Cluster {
	out := append([]Cluster(nil), cs...)
	for i := range out {
		if out[i].Name == name {
			out[i].Labels = map[string]string{key: value}
		}
	}
	return out
}

func unreachable(cs []Cluster, name string) []Cluster {
	out := append([]Cluster(nil), cs...)
	for i := range out {
		if out[i].Name == name {
			out[i].Reachable = false
		}
	}
	return out
}

// A stage may take an OCM Placement's decision groups, by name or by index; size then counts within them.
func TestDecideTakesDecisionGroups(t *testing.T) {
	cs := fleet(6, "r1")
	groups := map[string][]string{"c1": {"canary", "0"}, "c2": {"canary", "0"}, "c3": {"prod", "1"}, "c4": {"prod", "1"}, "c5": {"prod", "1"}}
	for i := range cs {
		cs[i].Groups = groups[cs[i].Name]
	}
	spec := v1alpha2.Rollout{Stages: []v1alpha2.RolloutStage{
		{Name: "first", DecisionGroups: []string{"canary"}},
		{Name: "second", DecisionGroups: []string{"1"}, Size: count(2)},
	}}
	d, err := Decide(Input{Spec: spec, Revision: "r2", Stable: "r1", Clusters: cs, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	var members []string
	for _, st := range d.Stages {
		members = append(members, st.Name+"="+strings.Repeat("x", st.Clusters))
	}
	if got, want := strings.Join(members, " "), "first=xx second=xx remaining=xx"; got != want {
		t.Errorf("stages %s, want %s (c1, c2 by the group's name; two of c3-c5 by its index; c5 and c6 left)", got, want)
	}
	moved := []string{}
	for _, c := range cs {
		if d.Revisions[c.Name] == "r2" {
			moved = append(moved, c.Name)
		}
	}
	if strings.Join(moved, ",") != "c1,c2" {
		t.Errorf("moved %v, want the canary group c1,c2 first", moved)
	}
}

// Stages says which stage takes each cluster, as Decide takes them: in name order whatever order the
// clusters come in, by name, selector or decision group, the rest in the remaining stage.
func TestStagesNamesTheStageThatTakesEachCluster(t *testing.T) {
	cs := fleet(6, "r1")
	cs[0].Labels = map[string]string{"tier": "canary"}
	cs[3].Groups = []string{"wave-1"}
	slices.Reverse(cs)
	spec := v1alpha2.Rollout{Stages: []v1alpha2.RolloutStage{
		{Name: "canary", ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}, Clusters: []string{"c6"}},
		{Name: "wave", DecisionGroups: []string{"wave-1"}},
		{Name: "half", Size: count(1)},
	}}
	got, err := Stages(spec, cs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"c1": "canary", "c6": "canary", "c4": "wave", "c2": "half", "c3": RemainingStage, "c5": RemainingStage}
	if !maps.Equal(got, want) {
		t.Errorf("Stages = %v, want %v", got, want)
	}
	d, err := Decide(Input{Spec: spec, Revision: "r2", Stable: "r1", Clusters: cs, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range d.Stages {
		n := 0
		for _, s := range got {
			if s == st.Name {
				n++
			}
		}
		if n != st.Clusters {
			t.Errorf("stage %s: Decide counts %d clusters, Stages puts %d in it", st.Name, st.Clusters, n)
		}
	}
	if _, err := Stages(v1alpha2.Rollout{Stages: []v1alpha2.RolloutStage{{Name: RemainingStage}}}, cs); err == nil {
		t.Error("a stage named remaining: no error")
	}
}

// A percentage is of a whole number of clusters, rounded up, exactly: no floating-point error makes
// 7% of 100 clusters eight.
func TestScaledIsExact(t *testing.T) {
	for total := 0; total <= 2000; total++ {
		for p := 0; p <= 100; p++ {
			got, err := scaled(pct(strconv.Itoa(p)+"%"), total, 0, "size")
			if err != nil {
				t.Fatal(err)
			}
			if want := (p*total + 99) / 100; got != want || got*100 < p*total || (got > 0 && (got-1)*100 >= p*total) {
				t.Fatalf("%d%% of %d = %d, want %d", p, total, got, want)
			}
		}
	}
	for _, bad := range []string{"7.5%", "101%", "-1%", "x%"} {
		if _, err := scaled(pct(bad), 10, 0, "size"); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
