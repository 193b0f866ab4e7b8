package rollout

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// Cluster is one cluster of the application as the API shows it.
type Cluster struct {
	Name   string
	Labels map[string]string
	// Groups are the names and indexes of the OCM decision groups the cluster is in, when the
	// application is placed by a Placement.
	Groups []string
	// Reachable: its ManagedCluster is Available.
	Reachable bool
	// Revision is the revision the cluster's work carries on the hub; "" when it has no work.
	Revision string
	// UpdatedAt is when the work got Revision (the hub's own record on the work).
	UpdatedAt time.Time
	// Reported: the agent's report is about the work's current generation, so Health is the health of
	// Revision. A report about an older generation — stale, or overtaken by the hub's write — is not.
	Reported bool
	// Health is the work's aggregate health, when Reported.
	Health v1alpha2.Health
	// Why says, when Health is not Healthy, which manifest is not and what the agent reports of it.
	Why string
	// HealthySince is when Health last became Healthy (its conditions' transition time).
	HealthySince time.Time
}

// Input is what a decision is made from: all of it read from the API.
type Input struct {
	Spec v1alpha2.Rollout
	// Revision is the revision the application wants; Stable the last one every cluster succeeded
	// at ("" before the first rollout completed: a cluster without the new revision then has no work).
	Revision, Stable string
	Clusters         []Cluster
	// Halted: the rollout of Revision halted earlier (the AppConfig's status says so). A halt stays,
	// even once the failed clusters recover or are rolled back, until a new revision or a resume.
	Halted bool
	// Approved names the stages approved for Revision.
	Approved []string
	Now      time.Time
}

// Decision is what the hub should write: each cluster's revision and the rollout's status.
type Decision struct {
	// Revisions is the revision each cluster's work should carry, by cluster name; "" for no work.
	Revisions map[string]string
	Phase     v1alpha2.RolloutPhase
	// Stage is the stage in progress ("" once complete, halted or rolled back).
	Stage string
	// Stable is the stable revision after this decision: Revision once complete.
	Stable string
	Stages []StageStatus
	// Failures are the failed clusters, in stage order then by name.
	Failures []Failure
	// RecheckAfter is when the decision may change with no report arriving (a soak ends, a deadline
	// passes); 0 when only a report can change it.
	RecheckAfter time.Duration
}

// StageStatus counts a stage's clusters.
type StageStatus struct {
	Name string
	// Clusters in the stage; Updated of them carry the revision; Succeeded and Failed of those.
	Clusters, Updated, Succeeded, Failed int
}

// Failure is a failed cluster and why.
type Failure struct {
	Cluster, Stage string
	// Reason is Degraded, ProgressDeadlineExceeded or ClusterUnreachable.
	Reason  string
	Message string
}

// Reasons of a Failure.
const (
	ReasonDegraded         = "Degraded"
	ReasonDeadlineExceeded = "ProgressDeadlineExceeded"
	ReasonUnreachable      = "ClusterUnreachable"
)

// RemainingStage names the stage of the clusters no stage of the spec takes.
const RemainingStage = "remaining"

// verdict is where a cluster stands with the rollout's revision.
type verdict int

const (
	pending     verdict = iota // does not carry the revision
	progressing                // carries it, not Healthy (or not reported) yet
	soaking                    // Healthy, for less than minSuccessTime
	succeeded
	failed
	skipped // unreachable under UnreachableClusters Skip: neither waited for nor counted
)

// stage is a stage with its members and effective configuration.
type stage struct {
	name     string
	approval bool
	members  []string // by name
	maxConc  int
	minOK    time.Duration
	deadline time.Duration // 0: none
}

// Decide decides which revision each cluster carries now. It fails only on a spec it cannot read (a
// bad selector, size or percentage, a duplicate stage), which the hub reports on the AppConfig.
func Decide(in Input) (Decision, error) {
	clusters := byName(in.Clusters)
	byName := make(map[string]Cluster, len(clusters))
	for _, c := range clusters {
		byName[c.Name] = c
	}
	d := Decision{Revisions: make(map[string]string, len(clusters)), Stable: in.Stable}
	if in.Revision == in.Stable {
		// Nothing to roll out: every cluster, a newly placed one too, carries the stable revision.
		for _, c := range clusters {
			d.Revisions[c.Name] = in.Stable
		}
		d.Phase = v1alpha2.RolloutComplete
		return d, nil
	}
	stages, err := buildStages(in.Spec, clusters)
	if err != nil {
		return Decision{}, err
	}
	maxFailures, err := scaled(in.Spec.MaxFailures, len(clusters), 0, "maxFailures")
	if err != nil {
		return Decision{}, err
	}
	policy := in.Spec.UnreachableClusters

	// Where every cluster stands, and the first stage not done: the current one. A stage is done when
	// each of its clusters succeeded, failed (within maxFailures, or the rollout halts) or is skipped.
	verdicts := make(map[string]verdict, len(clusters))
	why := map[string]Failure{}
	for _, s := range stages {
		for _, name := range s.members {
			v, f, recheck := judge(byName[name], in.Revision, s, policy, in.Now)
			verdicts[name] = v
			if v == failed {
				f.Cluster, f.Stage = name, s.name
				why[name] = f
			}
			d.RecheckAfter = earliest(d.RecheckAfter, recheck)
		}
	}
	current := firstNotDone(stages, verdicts)
	// A cluster that cannot be reached when its stage comes fails under UnreachableClusters Fail; that
	// may finish the stage, and the next one's turn comes at once.
	for marked := true; marked; current = firstNotDone(stages, verdicts) {
		marked = false
		for i := 0; i <= current && i < len(stages); i++ {
			for _, name := range stages[i].members {
				if verdicts[name] == pending && !byName[name].Reachable && policy == v1alpha2.UnreachableFail {
					verdicts[name], marked = failed, true
					why[name] = Failure{Cluster: name, Stage: stages[i].name, Reason: ReasonUnreachable,
						Message: "its ManagedCluster is not Available and unreachableClusters is Fail"}
				}
			}
		}
	}
	for _, s := range stages {
		st := StageStatus{Name: s.name, Clusters: len(s.members)}
		for _, name := range s.members {
			if byName[name].Revision == in.Revision {
				st.Updated++
			}
			switch verdicts[name] {
			case succeeded:
				st.Succeeded++
			case failed:
				st.Failed++
				d.Failures = append(d.Failures, why[name])
			}
		}
		d.Stages = append(d.Stages, st)
	}

	// Unless a cluster is moved below, it keeps what it carries; one without a work gets the stable
	// revision (a cluster placed mid-rollout waits for its stage on the stable one).
	for _, c := range clusters {
		d.Revisions[c.Name] = c.Revision
		if c.Revision == "" {
			d.Revisions[c.Name] = in.Stable
		}
	}

	if in.Halted || len(d.Failures) > maxFailures {
		if in.Spec.OnFailure == v1alpha2.RolloutFailureRollback && in.Stable != "" {
			d.Phase = v1alpha2.RolloutRolledBack
			for _, c := range clusters {
				d.Revisions[c.Name] = in.Stable
				back := c.Revision == in.Stable && c.Reported && c.Health == v1alpha2.Healthy
				if !back && (c.Reachable || policy != v1alpha2.UnreachableSkip) {
					d.Phase = v1alpha2.RolloutRollingBack
				}
			}
			d.RecheckAfter = 0
			return d, nil
		}
		d.Phase = v1alpha2.RolloutHalted
		d.RecheckAfter = 0
		return d, nil
	}
	if current == len(stages) {
		d.Phase, d.Stable = v1alpha2.RolloutComplete, in.Revision
		for _, c := range clusters {
			d.Revisions[c.Name] = in.Revision
		}
		return d, nil
	}
	cur := stages[current]
	d.Stage = cur.name
	if in.Spec.Paused {
		d.Phase = v1alpha2.RolloutPaused
		return d, nil
	}
	if cur.approval && !slices.Contains(in.Approved, cur.name) && d.Stages[current].Updated == 0 {
		d.Phase = v1alpha2.RolloutWaitingForApproval
		return d, nil
	}

	// Move the next clusters, in stage order then by name, while the current stage has room: changing
	// ones take it, and so do its failed ones (those of a done stage were tolerated and are left
	// behind). Members of earlier stages still pending were placed after their stage was done: they go
	// now.
	changing := 0
	var next []string
	for i := 0; i <= current; i++ {
		for _, name := range stages[i].members {
			switch verdicts[name] {
			case progressing, soaking:
				changing++
			case failed:
				if i == current {
					changing++
				}
			case pending:
				next = append(next, name)
			case skipped:
				if byName[name].Revision != in.Revision {
					d.Revisions[name] = in.Revision // written now, applied when it is back; never waited for
				}
			}
		}
	}
	for _, name := range next {
		if changing >= cur.maxConc {
			break
		}
		d.Revisions[name] = in.Revision
		changing++
	}
	d.Phase = v1alpha2.RolloutProgressing
	return d, nil
}

// firstNotDone is the index of the first stage with a cluster that has neither succeeded nor failed
// nor is skipped, or len(stages).
func firstNotDone(stages []stage, verdicts map[string]verdict) int {
	for i, s := range stages {
		for _, name := range s.members {
			if v := verdicts[name]; v != succeeded && v != failed && v != skipped {
				return i
			}
		}
	}
	return len(stages)
}

// judge says where cluster c of stage s stands with revision rev, the failure if it failed, and when
// that may change with no report (a soak ending, a deadline passing).
func judge(c Cluster, rev string, s stage, policy v1alpha2.UnreachablePolicy, now time.Time) (verdict, Failure, time.Duration) {
	if !c.Reachable && policy == v1alpha2.UnreachableSkip {
		return skipped, Failure{}, 0
	}
	if c.Revision != rev {
		return pending, Failure{}, 0
	}
	if c.Reported && c.Health == v1alpha2.Degraded {
		return failed, Failure{Reason: ReasonDegraded, Message: cmp.Or(c.Why, "the agent reports a manifest Degraded")}, 0
	}
	if c.Reported && c.Health == v1alpha2.Healthy {
		since := c.HealthySince
		if since.Before(c.UpdatedAt) {
			since = c.UpdatedAt // healthy before it got the revision: the soak counts from then
		}
		if left := since.Add(s.minOK).Sub(now); left > 0 {
			return soaking, Failure{}, left
		}
		return succeeded, Failure{}, 0
	}
	if !c.Reachable && policy == v1alpha2.UnreachableFail {
		return failed, Failure{Reason: ReasonUnreachable, Message: "its ManagedCluster is not Available and unreachableClusters is Fail"}, 0
	}
	if s.deadline > 0 {
		left := c.UpdatedAt.Add(s.deadline).Sub(now)
		if left <= 0 {
			state := "has not reported on the revision"
			if c.Reported {
				state = "is " + string(c.Health)
				if c.Why != "" {
					state += ": " + c.Why
				}
			}
			return failed, Failure{Reason: ReasonDeadlineExceeded,
				Message: fmt.Sprintf("not Healthy within the progressDeadline %s of receiving the revision: it %s", s.deadline, state)}, 0
		}
		return progressing, Failure{}, left
	}
	return progressing, Failure{}, 0
}

// Stages is the stage that takes each cluster, by cluster name, as Decide assigns them: each stage of
// the spec takes, in name order, from the clusters no earlier stage took, and RemainingStage holds the
// rest. A view of the rollout calls it to say which stage a cluster is in without deciding anything.
func Stages(spec v1alpha2.Rollout, clusters []Cluster) (map[string]string, error) {
	stages, err := buildStages(spec, byName(clusters))
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(clusters))
	for _, s := range stages {
		for _, name := range s.members {
			out[name] = s.name
		}
	}
	return out, nil
}

// byName is clusters sorted by name, the order stages take them in.
func byName(clusters []Cluster) []Cluster {
	out := slices.Clone(clusters)
	slices.SortFunc(out, func(a, b Cluster) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// buildStages assigns every cluster to a stage: each stage of the spec takes from the clusters no
// earlier stage took, and the rest form the last stage.
func buildStages(spec v1alpha2.Rollout, clusters []Cluster) ([]stage, error) {
	remaining := make([]string, 0, len(clusters))
	labelsOf := make(map[string]labels.Set, len(clusters))
	groupsOf := make(map[string][]string, len(clusters))
	for _, c := range clusters {
		remaining = append(remaining, c.Name)
		labelsOf[c.Name] = c.Labels
		groupsOf[c.Name] = c.Groups
	}
	total := len(clusters)
	seen := map[string]bool{}
	var out []stage
	for i, st := range spec.Stages {
		where := fmt.Sprintf("stages[%d] (%s)", i, st.Name)
		if st.Name == "" || st.Name == RemainingStage || seen[st.Name] {
			return nil, fmt.Errorf("%s: a stage needs a name of its own, not empty, duplicate or %q", where, RemainingStage)
		}
		seen[st.Name] = true
		candidates := remaining
		if len(st.Clusters) > 0 || st.ClusterSelector != nil || len(st.DecisionGroups) > 0 {
			sel := labels.Nothing()
			if st.ClusterSelector != nil {
				var err error
				if sel, err = metav1.LabelSelectorAsSelector(st.ClusterSelector); err != nil {
					return nil, fmt.Errorf("%s: clusterSelector: %w", where, err)
				}
			}
			candidates = nil
			for _, name := range remaining {
				inGroup := slices.ContainsFunc(groupsOf[name], func(g string) bool { return slices.Contains(st.DecisionGroups, g) })
				if slices.Contains(st.Clusters, name) || sel.Matches(labelsOf[name]) || inGroup {
					candidates = append(candidates, name)
				}
			}
		}
		n, err := scaled(st.Size, total, len(candidates), where+": size")
		if err != nil {
			return nil, err
		}
		members := candidates[:min(n, len(candidates))]
		taken := make(map[string]bool, len(members))
		for _, name := range members {
			taken[name] = true
		}
		s, err := configure(spec.RolloutConfig, st.RolloutConfig, st.Name, members, where)
		if err != nil {
			return nil, err
		}
		s.approval = st.RequireApproval
		out = append(out, s)
		remaining = slices.DeleteFunc(slices.Clone(remaining), func(name string) bool { return taken[name] })
	}
	if len(remaining) > 0 || len(out) == 0 {
		s, err := configure(spec.RolloutConfig, v1alpha2.RolloutConfig{}, RemainingStage, remaining, "the remaining clusters")
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// configure is a stage with its own settings over the rollout's defaults.
func configure(defaults, own v1alpha2.RolloutConfig, name string, members []string, where string) (stage, error) {
	pick := func(own, def *metav1.Duration) time.Duration {
		switch {
		case own != nil:
			return own.Duration
		case def != nil:
			return def.Duration
		}
		return 0
	}
	conc := own.MaxConcurrency
	if conc == nil {
		conc = defaults.MaxConcurrency
	}
	maxConc, err := scaled(conc, len(members), len(members), where+": maxConcurrency")
	if err != nil {
		return stage{}, err
	}
	if conc != nil && conc.Type == intstr.Int && maxConc < 1 {
		return stage{}, fmt.Errorf("%s: maxConcurrency %s lets no cluster change: want at least 1", where, conc.String())
	}
	// A percentage of a small stage rounds up, to one cluster at least.
	s := stage{name: name, members: members, maxConc: max(maxConc, 1),
		minOK: pick(own.MinSuccessTime, defaults.MinSuccessTime), deadline: pick(own.ProgressDeadline, defaults.ProgressDeadline)}
	if s.minOK < 0 || s.deadline < 0 {
		return stage{}, fmt.Errorf("%s: minSuccessTime and progressDeadline cannot be negative", where)
	}
	return s, nil
}

// scaled is v as a count: an integer as it is, a percentage of total rounded up (as OCM's rollout
// helper rounds); def when v is absent.
func scaled(v *intstr.IntOrString, total, def int, what string) (int, error) {
	if v == nil {
		return def, nil
	}
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return 0, fmt.Errorf("%s %d: cannot be negative", what, v.IntVal)
		}
		return int(v.IntVal), nil
	}
	pct, ok := strings.CutSuffix(v.StrVal, "%")
	if !ok {
		return 0, fmt.Errorf("%s %q: want a count or a percentage such as 10%%", what, v.StrVal)
	}
	p, err := strconv.Atoi(pct)
	if err != nil || p < 0 || p > 100 {
		return 0, errors.Join(fmt.Errorf("%s %q: want a whole percentage from 0%% to 100%%", what, v.StrVal), err)
	}
	// In integers: in floating point 7% of 100 is 7.000000000000001, and rounds up to 8.
	return (p*total + 99) / 100, nil
}

// earliest is the smaller of two recheck delays, 0 meaning none.
func earliest(a, b time.Duration) time.Duration {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}
