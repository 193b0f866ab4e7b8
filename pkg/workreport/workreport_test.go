package workreport

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

const (
	manifestProgressing = workv1.ManifestProgressing
	manifestDegraded    = workv1.ManifestDegraded
)

const (
	isTrue  = metav1.ConditionTrue
	isFalse = metav1.ConditionFalse
	unknown = metav1.ConditionUnknown
)

// cond is a condition typ with status s about generation gen, its reason and message naming it.
func cond(typ string, s metav1.ConditionStatus, gen int64) metav1.Condition {
	return metav1.Condition{Type: typ, Status: s, ObservedGeneration: gen, Reason: typ + "Reason", Message: typ + " message"}
}

// A work's own condition counts only when it is about the work's generation: missing, about an earlier
// generation, or without a generation (0), it says nothing about the current spec.
func TestWorkStatusIsAboutTheGeneration(t *testing.T) {
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		want  metav1.ConditionStatus
	}{
		{"missing", nil, unknown},
		{"another type only", []metav1.Condition{cond(workv1.WorkAvailable, isTrue, 3)}, unknown},
		{"current true", []metav1.Condition{cond(workv1.WorkApplied, isTrue, 3)}, isTrue},
		{"current false", []metav1.Condition{cond(workv1.WorkApplied, isFalse, 3)}, isFalse},
		{"older generation", []metav1.Condition{cond(workv1.WorkApplied, isTrue, 2)}, unknown},
		{"newer generation", []metav1.Condition{cond(workv1.WorkApplied, isTrue, 4)}, unknown},
		{"no generation recorded", []metav1.Condition{cond(workv1.WorkApplied, isTrue, 0)}, unknown},
	} {
		if got := WorkStatus(tc.conds, workv1.WorkApplied, 3); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// A manifest's report is read about the work's generation: Applied and Available from their conditions
// (observedGeneration 0 taken at its word, for agents that do not record it), health from Progressing
// and Degraded about the generation, with the conditions behind each verdict.
func TestReadManifest(t *testing.T) {
	const gen = 3
	healthy := func(gen int64) []metav1.Condition {
		return []metav1.Condition{cond(manifestProgressing, isFalse, gen), cond(manifestDegraded, isFalse, gen)}
	}
	with := func(lists ...[]metav1.Condition) []metav1.Condition {
		var out []metav1.Condition
		for _, l := range lists {
			out = append(out, l...)
		}
		return out
	}
	reported := []metav1.Condition{cond(workv1.ManifestApplied, isTrue, gen), cond(workv1.ManifestAvailable, isTrue, gen)}
	for _, tc := range []struct {
		name                     string
		conds                    []metav1.Condition
		applied, available       metav1.ConditionStatus
		health                   v1alpha2.Health
		appliedWhy, availableWhy string // the type of AppliedCondition and AvailableCondition; "" for nil
		unhealthy                string // the type of Unhealthy; "" for nil
		fine                     bool
	}{
		{name: "nothing reported", applied: unknown, available: unknown, health: v1alpha2.HealthUnknown},
		{name: "fine", conds: with(reported, healthy(gen)), applied: isTrue, available: isTrue, health: v1alpha2.Healthy,
			appliedWhy: workv1.ManifestApplied, availableWhy: workv1.ManifestAvailable, fine: true},
		{name: "older generation", conds: with([]metav1.Condition{cond(workv1.ManifestApplied, isTrue, gen-1), cond(workv1.ManifestAvailable, isTrue, gen-1)}, healthy(gen-1)),
			applied: unknown, available: unknown, health: v1alpha2.HealthUnknown},
		{name: "no generation recorded: Applied and Available taken at their word, health not",
			conds:   with([]metav1.Condition{cond(workv1.ManifestApplied, isTrue, 0), cond(workv1.ManifestAvailable, isTrue, 0)}, healthy(0)),
			applied: isTrue, available: isTrue, health: v1alpha2.HealthUnknown, appliedWhy: workv1.ManifestApplied, availableWhy: workv1.ManifestAvailable},
		{name: "apply failed", conds: with([]metav1.Condition{cond(workv1.ManifestApplied, isFalse, gen)}, healthy(gen)),
			applied: isFalse, available: unknown, health: v1alpha2.Healthy, appliedWhy: workv1.ManifestApplied},
		{name: "not available", conds: with([]metav1.Condition{cond(workv1.ManifestApplied, isTrue, gen), cond(workv1.ManifestAvailable, isFalse, gen)}, healthy(gen)),
			applied: isTrue, available: isFalse, health: v1alpha2.Healthy, appliedWhy: workv1.ManifestApplied, availableWhy: workv1.ManifestAvailable},
		{name: "progressing", conds: with(reported, []metav1.Condition{cond(manifestProgressing, isTrue, gen), cond(manifestDegraded, isFalse, gen)}),
			applied: isTrue, available: isTrue, health: v1alpha2.Progressing, appliedWhy: workv1.ManifestApplied, availableWhy: workv1.ManifestAvailable, unhealthy: manifestProgressing},
		{name: "degraded wins over progressing", conds: with(reported, []metav1.Condition{cond(manifestProgressing, isTrue, gen), cond(manifestDegraded, isTrue, gen)}),
			applied: isTrue, available: isTrue, health: v1alpha2.Degraded, appliedWhy: workv1.ManifestApplied, availableWhy: workv1.ManifestAvailable, unhealthy: manifestDegraded},
		{name: "degraded of an older generation does not count", conds: with(reported, []metav1.Condition{cond(manifestProgressing, isFalse, gen), cond(manifestDegraded, isTrue, gen-1)}),
			applied: isTrue, available: isTrue, health: v1alpha2.HealthUnknown, appliedWhy: workv1.ManifestApplied, availableWhy: workv1.ManifestAvailable},
		{name: "healthy needs Degraded False too", conds: with(reported, []metav1.Condition{cond(manifestProgressing, isFalse, gen)}),
			applied: isTrue, available: isTrue, health: v1alpha2.HealthUnknown, appliedWhy: workv1.ManifestApplied, availableWhy: workv1.ManifestAvailable},
		{name: "healthy needs Progressing False too", conds: with(reported, []metav1.Condition{cond(manifestDegraded, isFalse, gen)}),
			applied: isTrue, available: isTrue, health: v1alpha2.HealthUnknown, appliedWhy: workv1.ManifestApplied, availableWhy: workv1.ManifestAvailable},
		{name: "health unknown when a condition is Unknown", conds: with(reported, []metav1.Condition{cond(manifestProgressing, unknown, gen), cond(manifestDegraded, isFalse, gen)}),
			applied: isTrue, available: isTrue, health: v1alpha2.HealthUnknown, appliedWhy: workv1.ManifestApplied, availableWhy: workv1.ManifestAvailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ReadManifest(tc.conds, gen)
			if r.Applied != tc.applied || r.Available != tc.available || r.Health != tc.health {
				t.Errorf("applied %s, available %s, health %s; want %s, %s, %s", r.Applied, r.Available, r.Health, tc.applied, tc.available, tc.health)
			}
			for _, c := range []struct {
				what string
				got  *metav1.Condition
				want string
			}{{"AppliedCondition", r.AppliedCondition, tc.appliedWhy}, {"AvailableCondition", r.AvailableCondition, tc.availableWhy}, {"Unhealthy", r.Unhealthy, tc.unhealthy}} {
				switch {
				case c.want == "" && c.got != nil:
					t.Errorf("%s %+v, want none", c.what, *c.got)
				case c.want != "" && (c.got == nil || c.got.Type != c.want || c.got.Message != c.want+" message"):
					t.Errorf("%s %+v, want the %s condition", c.what, c.got, c.want)
				}
			}
			if r.Fine() != tc.fine {
				t.Errorf("Fine() = %v, want %v", r.Fine(), tc.fine)
			}
		})
	}
}

// The conditions behind a report's verdicts are those of the report read, not copies: the hub reads
// every manifest of a fleet and must not allocate for it.
func TestReadManifestPointsIntoTheReport(t *testing.T) {
	conds := []metav1.Condition{cond(workv1.ManifestApplied, isFalse, 3), cond(manifestDegraded, isTrue, 3)}
	r := ReadManifest(conds, 3)
	if r.AppliedCondition != &conds[0] || r.Unhealthy != &conds[1] {
		t.Errorf("conditions %p and %p, want %p and %p", r.AppliedCondition, r.Unhealthy, &conds[0], &conds[1])
	}
	if allocs := testing.AllocsPerRun(100, func() { r = ReadManifest(conds, 3) }); allocs != 0 {
		t.Errorf("%v allocations a read, want none", allocs)
	}
}

// What an agent reported on last, whatever the work's generation is now: its Applied condition's
// generation. And a work's Complete counts whatever generation it is about: finished is finished.
func TestReportedGenerationAndComplete(t *testing.T) {
	if g := ReportedGeneration(nil); g != 0 {
		t.Errorf("no report: generation %d, want 0", g)
	}
	conds := []metav1.Condition{cond(workv1.WorkAvailable, isTrue, 5), cond(workv1.WorkApplied, isFalse, 4), cond(workv1.WorkComplete, isTrue, 2)}
	if g := ReportedGeneration(conds); g != 4 {
		t.Errorf("reported on generation %d, want 4 (Applied's)", g)
	}
	if c := Complete(conds); c == nil || c.ObservedGeneration != 2 {
		t.Errorf("Complete %+v, want the condition of generation 2", c)
	}
	if c := WorkCondition(conds, workv1.WorkAvailable, 4); c != nil {
		t.Errorf("Available of generation 5 read for generation 4: %+v", c)
	}
}

// The conditions that explain a verdict that is not fine are those a person reads the message of.
func TestExplains(t *testing.T) {
	for _, tc := range []struct {
		c    metav1.Condition
		want bool
	}{
		{cond(workv1.ManifestApplied, isFalse, 1), true},
		{cond(workv1.ManifestApplied, unknown, 1), true},
		{cond(workv1.ManifestApplied, isTrue, 1), false},
		{cond(workv1.ManifestAvailable, isFalse, 1), false},
		{cond(manifestProgressing, isTrue, 1), true},
		{cond(manifestProgressing, isFalse, 1), false},
		{cond(manifestDegraded, isTrue, 1), true},
		{cond(workv1.ManifestComplete, isTrue, 1), false},
	} {
		if got := Explains(tc.c); got != tc.want {
			t.Errorf("%s %s: explains %v, want %v", tc.c.Type, tc.c.Status, got, tc.want)
		}
	}
}

// The messages a cache of works keeps: those that explain a verdict, and a True Drifted condition's,
// which is its report; nothing of a manifest that is fine and never drifted.
func TestMessageRead(t *testing.T) {
	for _, tc := range []struct {
		c    metav1.Condition
		want bool
	}{
		{cond(workv1.ManifestApplied, isFalse, 1), true},
		{cond(manifestDegraded, isTrue, 1), true},
		{cond(ConditionDrifted, isTrue, 1), true},
		{cond(ConditionDrifted, isFalse, 1), false},
		{cond(workv1.ManifestApplied, isTrue, 1), false},
		{cond(workv1.ManifestAvailable, isTrue, 1), false},
		{cond(manifestProgressing, isFalse, 1), false},
	} {
		if got := MessageRead(tc.c); got != tc.want {
			t.Errorf("%s %s: message read %v, want %v", tc.c.Type, tc.c.Status, got, tc.want)
		}
	}
}

// A report is of the manifest's object when group, kind, name and namespace agree — or when the agent,
// whose spoke serves the kind cluster-scoped, reported it without the namespace its manifest named.
func TestSameObject(t *testing.T) {
	id := workv1.ManifestResourceMeta{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding", Namespace: "team-a", Name: "grab"}
	for _, tc := range []struct {
		name   string
		report workv1.ManifestResourceMeta
		want   bool
	}{
		{"the same", id, true},
		{"cluster-scoped, reported without the namespace", workv1.ManifestResourceMeta{Group: id.Group, Kind: id.Kind, Name: id.Name, Resource: "clusterrolebindings"}, true},
		{"no namespace and no resource: not mapped, not known to be cluster-scoped", workv1.ManifestResourceMeta{Group: id.Group, Kind: id.Kind, Name: id.Name}, false},
		{"another namespace", workv1.ManifestResourceMeta{Group: id.Group, Kind: id.Kind, Name: id.Name, Namespace: "team-b", Resource: "clusterrolebindings"}, false},
		{"another name", workv1.ManifestResourceMeta{Group: id.Group, Kind: id.Kind, Name: "other", Namespace: "team-a"}, false},
		{"another kind", workv1.ManifestResourceMeta{Group: id.Group, Kind: "RoleBinding", Name: id.Name, Namespace: "team-a"}, false},
	} {
		if got := SameObject(tc.report, id); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
