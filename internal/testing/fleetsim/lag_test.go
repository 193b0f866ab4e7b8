package fleetsim

import (
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func healthy(ms, n int) Observation { return Observation{At: at(ms), Summary: Summary{Healthy: n}} }

// Degrading three clusters of an AppConfig at 10 ms intervals: the summary skips a count (two writes
// folded into one status write), and each write's lag runs to the first summary that includes it.
func TestLagsDown(t *testing.T) {
	writes := []StatusWrite{{"a", at(20)}, {"a", at(10)}, {"a", at(30)}} // acknowledged out of order
	// Before the phase (at 5ms) the count was low too, while the clusters first reported.
	history := map[string][]Observation{"a": {healthy(-50, 0), healthy(-20, 10), healthy(15, 9), healthy(45, 7)}}
	lags, err := Lags(writes, map[string]int{"a": 10}, history, at(5), true)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{5 * time.Millisecond, 15 * time.Millisecond, 25 * time.Millisecond}
	if !slices.Equal(lags, want) {
		t.Errorf("lags %v, want %v", lags, want)
	}
}

// Healing, of two AppConfigs: each counts its own writes; a summary seen before a write was
// acknowledged (the write applied before its answer came back) is no negative lag.
func TestLagsUpPerAppConfig(t *testing.T) {
	writes := []StatusWrite{{"a", at(10)}, {"b", at(10)}, {"b", at(20)}}
	history := map[string][]Observation{
		"a": {healthy(0, 5), healthy(8, 6)},
		"b": {healthy(0, 1), healthy(50, 2), healthy(70, 3)},
	}
	lags, err := Lags(writes, map[string]int{"a": 5, "b": 1}, history, at(5), false)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{0, 40 * time.Millisecond, 50 * time.Millisecond}
	if !slices.Equal(lags, want) {
		t.Errorf("lags %v, want %v", lags, want)
	}
}

func TestLagsNameAWriteThatNeverShowed(t *testing.T) {
	writes := []StatusWrite{{"a", at(10)}, {"a", at(20)}}
	_, err := Lags(writes, map[string]int{"a": 10}, map[string][]Observation{"a": {healthy(0, 10), healthy(15, 9)}}, at(5), true)
	if err == nil || !strings.Contains(err.Error(), "write 2 of 2 never showed (want 8 healthy; last showed 9 healthy)") {
		t.Errorf("error %v; want one naming write 2 and how far the AppConfig got", err)
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 200; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 100 * time.Millisecond}, {99, 198 * time.Millisecond}, {100, 200 * time.Millisecond}, {0.1, time.Millisecond}} {
		if got := Percentile(d, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if got := Percentile([]time.Duration{7}, 99); got != 7 {
		t.Errorf("p99 of one = %v, want it", got)
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("p50 of none = %v, want 0", got)
	}
}
