package benchgoal

import "testing"

func TestGoalSaysWhetherAFigureMeetsIt(t *testing.T) {
	for _, tc := range []struct {
		goal  Goal
		value float64
		want  string
	}{
		{AtMost(28), 25.9, "goal KiB/work ≤ 28: 25.9, met"},
		{AtMost(28), 28, "goal KiB/work ≤ 28: 28, met"},
		{AtMost(28), 29.04, "goal KiB/work ≤ 28: 29.04, NOT MET"},
		{AtLeast(0.5), 0.1543, "goal KiB/work ≥ 0.5: 0.1543, NOT MET"},
		{AtLeast(0.5), 0.5, "goal KiB/work ≥ 0.5: 0.5, met"},
	} {
		if got := tc.goal.Describe("KiB/work", tc.value); got != tc.want {
			t.Errorf("%+v of %v: %q, want %q", tc.goal, tc.value, got, tc.want)
		}
	}
}
