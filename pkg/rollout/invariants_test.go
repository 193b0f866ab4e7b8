package rollout

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// Random rollouts run to their end against a simulated fleet whose agents report late, stale, healthy,
// progressing or degraded, and clusters that come and go out of reach. After every decision:
//   - it is a function of its input alone (the hub restarted there decides the same);
//   - no cluster of a stage after the current one receives the revision, and no more clusters move
//     than the current stage has room for;
//   - past maxFailures the rollout is halted and no cluster receives the revision any more;
//   - once halted it stays halted;
//   - complete means every reachable cluster reported on the revision itself — a stale report never
//     counts — and was Healthy, or failed within maxFailures.
func TestDecideKeepsItsInvariants(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FERRY_ROLLOUT_SEED"); s != "" { // to replay a failure
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("FERRY_ROLLOUT_SEED: %v", err)
		}
	}
	t.Logf("seed %d (FERRY_ROLLOUT_SEED replays it)", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	outcomes := map[v1alpha2.RolloutPhase]int{}
	for round := range 400 {
		spec := randomSpec(rng)
		clusters := randomFleet(rng)
		now, halted := t0, false
		var last Decision
		for step := range 400 {
			in := Input{Spec: spec, Revision: "r2", Stable: "r1", Clusters: clusters, Halted: halted, Now: now}
			d, err := Decide(in)
			if err != nil {
				t.Fatalf("round %d step %d: %v", round, step, err)
			}
			if again, _ := Decide(in); !reflect.DeepEqual(again, d) {
				t.Fatalf("round %d step %d: two decisions on one input differ:\n%+v\n%+v", round, step, d, again)
			}
			if problem := checkDecision(in, d); problem != "" {
				t.Fatalf("round %d step %d (seed %d): %s\nspec %+v\nclusters %+v\ndecision %+v", round, step, seed, problem, spec, clusters, d)
			}
			last = d
			if d.Phase == v1alpha2.RolloutHalted || d.Phase == v1alpha2.RolloutRollingBack || d.Phase == v1alpha2.RolloutRolledBack {
				halted = true // the hub records the halt in the AppConfig's status
			}
			if d.Phase == v1alpha2.RolloutComplete || d.Phase == v1alpha2.RolloutRolledBack || (d.Phase == v1alpha2.RolloutHalted && step > 50) {
				break
			}
			clusters = simulate(rng, clusters, d, now)
			now = now.Add(time.Duration(rng.IntN(40)) * time.Second)
		}
		outcomes[last.Phase]++
	}
	t.Logf("rollouts by how they ended: %v", outcomes)
	if outcomes[v1alpha2.RolloutComplete] == 0 || outcomes[v1alpha2.RolloutHalted]+outcomes[v1alpha2.RolloutRolledBack] == 0 {
		t.Errorf("the simulation reached too few ends to test them: %v", outcomes)
	}
}

// checkDecision returns the first invariant d breaks, or "".
func checkDecision(in Input, d Decision) string {
	stages, err := buildStages(in.Spec, in.Clusters)
	if err != nil {
		return err.Error()
	}
	stageOf := map[string]int{}
	for i, s := range stages {
		for _, name := range s.members {
			stageOf[name] = i
		}
	}
	current := slices.IndexFunc(stages, func(s stage) bool { return s.name == d.Stage })
	maxFailures, _ := scaled(in.Spec.MaxFailures, len(in.Clusters), 0, "")
	var moved []string
	for _, c := range in.Clusters {
		if d.Revisions[c.Name] == in.Revision && c.Revision != in.Revision {
			moved = append(moved, c.Name)
		}
	}
	halting := d.Phase == v1alpha2.RolloutHalted || d.Phase == v1alpha2.RolloutRollingBack || d.Phase == v1alpha2.RolloutRolledBack
	switch {
	case len(d.Failures) > maxFailures && !halting:
		return fmt.Sprintf("%d failures, maxFailures %d, phase %s: not halted", len(d.Failures), maxFailures, d.Phase)
	case in.Halted && !halting:
		return fmt.Sprintf("halted before, now %s", d.Phase)
	case halting && len(moved) > 0:
		return fmt.Sprintf("halted (%s), yet %v receive the revision", d.Phase, moved)
	case d.Phase == v1alpha2.RolloutComplete:
		failed := map[string]bool{}
		for _, f := range d.Failures {
			failed[f.Cluster] = true
		}
		for _, c := range in.Clusters {
			succeeded := c.Revision == in.Revision && c.Reported && c.Health == v1alpha2.Healthy
			skipped := !c.Reachable && in.Spec.UnreachableClusters == v1alpha2.UnreachableSkip
			if !succeeded && !skipped && !failed[c.Name] {
				return fmt.Sprintf("complete, yet %s carries %q (reported %t, %s) and is not counted as failed", c.Name, c.Revision, c.Reported, c.Health)
			}
		}
		return ""
	}
	if len(moved) == 0 {
		return ""
	}
	if current < 0 {
		return fmt.Sprintf("%v receive the revision in phase %s with no current stage", moved, d.Phase)
	}
	counted := 0
	for _, name := range moved {
		if stageOf[name] > current {
			return fmt.Sprintf("%s of stage %s receives the revision while stage %s is current", name, stages[stageOf[name]].name, d.Stage)
		}
		if c := findCluster(in.Clusters, name); c.Reachable || in.Spec.UnreachableClusters != v1alpha2.UnreachableSkip {
			counted++
		}
	}
	if counted > stages[current].maxConc {
		return fmt.Sprintf("%d clusters move at once, stage %s allows %d", counted, d.Stage, stages[current].maxConc)
	}
	return ""
}

func findCluster(cs []Cluster, name string) Cluster {
	i := slices.IndexFunc(cs, func(c Cluster) bool { return c.Name == name })
	return cs[i]
}

// simulate writes the decision and lets the fleet's agents and clusters move on: reports arrive late,
// some clusters turn Degraded on the new revision, a Healthy report can be overtaken by a newer
// generation (stale), and clusters drop out of reach and come back.
func simulate(rng *rand.Rand, clusters []Cluster, d Decision, now time.Time) []Cluster {
	out := slices.Clone(clusters)
	for i := range out {
		c := &out[i]
		if rev := d.Revisions[c.Name]; rev != c.Revision {
			c.Revision, c.UpdatedAt, c.Reported, c.Health = rev, now, false, ""
			continue
		}
		if c.Revision == "" {
			continue
		}
		switch r := rng.IntN(100); {
		case r < 3:
			c.Reachable = !c.Reachable
		case r < 6 && c.Reported:
			c.Reported = false // a newer generation of the work the agent has not reported on yet
		case !c.Reported && r < 60, c.Reported && c.Health == v1alpha2.Progressing && r < 40:
			c.Reported = true
			switch h := rng.IntN(100); {
			case c.Revision == "r2" && h < 4:
				c.Health = v1alpha2.Degraded
			case h < 20:
				c.Health = v1alpha2.Progressing
			default:
				if c.Health != v1alpha2.Healthy {
					c.HealthySince = now
				}
				c.Health = v1alpha2.Healthy
			}
		}
	}
	return out
}

func randomFleet(rng *rand.Rand) []Cluster {
	n := 1 + rng.IntN(25)
	out := make([]Cluster, n)
	for i := range out {
		out[i] = Cluster{Name: fmt.Sprintf("c%02d", i), Reachable: rng.IntN(10) > 0, Revision: "r1",
			UpdatedAt: t0.Add(-time.Hour), Reported: true, Health: v1alpha2.Healthy, HealthySince: t0.Add(-time.Hour),
			Labels: map[string]string{"zone": []string{"a", "b", "c"}[rng.IntN(3)]}}
	}
	return out
}

func randomSpec(rng *rand.Rand) v1alpha2.Rollout {
	var spec v1alpha2.Rollout
	for i := range rng.IntN(4) {
		st := v1alpha2.RolloutStage{Name: fmt.Sprintf("s%d", i)}
		switch rng.IntN(4) {
		case 0:
			st.Clusters = []string{fmt.Sprintf("c%02d", rng.IntN(10)), fmt.Sprintf("c%02d", rng.IntN(10))}
		case 1:
			st.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"zone": []string{"a", "b", "c"}[rng.IntN(3)]}}
		case 2:
			st.Size = pct(fmt.Sprintf("%d%%", 1+rng.IntN(50)))
		case 3:
			st.Size = count(rng.IntN(4))
		}
		if rng.IntN(3) == 0 {
			st.MaxConcurrency = count(1 + rng.IntN(3))
		}
		spec.Stages = append(spec.Stages, st)
	}
	if rng.IntN(2) == 0 {
		spec.MaxConcurrency = pct(fmt.Sprintf("%d%%", 1+rng.IntN(100)))
	}
	if rng.IntN(2) == 0 {
		spec.MaxFailures = count(rng.IntN(3))
	}
	if rng.IntN(2) == 0 {
		spec.MinSuccessTime = dur(time.Duration(rng.IntN(120)) * time.Second)
	}
	if rng.IntN(2) == 0 {
		spec.ProgressDeadline = dur(time.Duration(60+rng.IntN(600)) * time.Second)
	}
	spec.OnFailure = []v1alpha2.RolloutFailurePolicy{"", v1alpha2.RolloutFailurePause, v1alpha2.RolloutFailureRollback}[rng.IntN(3)]
	spec.UnreachableClusters = []v1alpha2.UnreachablePolicy{"", v1alpha2.UnreachableWait, v1alpha2.UnreachableSkip, v1alpha2.UnreachableFail}[rng.IntN(4)]
	return spec
}
