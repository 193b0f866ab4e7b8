package benchgoal

import (
	"fmt"
	"testing"
)

// Goal is a bound a figure should stay within.
type Goal struct {
	bound   float64
	atLeast bool // the figure should be at least bound; otherwise at most
}

// AtMost is the goal of a figure no greater than bound.
func AtMost(bound float64) Goal { return Goal{bound: bound} }

// AtLeast is the goal of a figure no less than bound.
func AtLeast(bound float64) Goal { return Goal{bound: bound, atLeast: true} }

// Met reports whether value meets the goal.
func (g Goal) Met(value float64) bool {
	if g.atLeast {
		return value >= g.bound
	}
	return value <= g.bound
}

// Describe is the line Report logs: the figure, the goal, and whether it is met.
func (g Goal) Describe(unit string, value float64) string {
	sign, verdict := "≤", "met"
	if g.atLeast {
		sign = "≥"
	}
	if !g.Met(value) {
		verdict = "NOT MET"
	}
	return fmt.Sprintf("goal %s %s %g: %.4g, %s", unit, sign, g.bound, value, verdict)
}

// Report reports value as the benchmark's metric unit and logs it beside its goal (a benchmark's log is
// always printed).
func Report(b *testing.B, value float64, unit string, g Goal) {
	b.Helper()
	b.ReportMetric(value, unit)
	b.Log(g.Describe(unit, value))
}
