package fleetsim

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// StatusWrite is one simulated agent's status write that moves an AppConfig's healthy count by one.
type StatusWrite struct {
	// AppConfig is the AppConfig whose work was written.
	AppConfig string
	// At is when the API server acknowledged the write.
	At time.Time
}

// Lags is how long each write took to show in its AppConfig's summary, for a phase of writes that
// each move one cluster of their AppConfig the same way: down from healthy to degraded (down) or back
// up. The AppConfig's healthy count then moves monotonically, so the j-th write (in the order
// acknowledged) of an AppConfig whose count was start shows once the count is at or below start-j
// (down) or at or above start+j (up). A write's lag is from its acknowledgement until the first
// summary that shows it (never negative: writes in flight together may be acknowledged in another
// order than they were applied). start is each AppConfig's healthy count before the phase; history
// its observations (AppConfigWatcher.History), of which those before since, when the phase began, do
// not count (an AppConfig's count was low before, too, while its clusters first reported). A write
// whose summary never came is an error naming how far its AppConfig got.
func Lags(writes []StatusWrite, start map[string]int, history map[string][]Observation, since time.Time, down bool) ([]time.Duration, error) {
	byApp := map[string][]time.Time{}
	for _, w := range writes {
		byApp[w.AppConfig] = append(byApp[w.AppConfig], w.At)
	}
	var lags []time.Duration
	for app, times := range byApp {
		slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
		obs := history[app]
		next := 0 // observations before it show fewer writes than the current one, or are older than the phase
		for next < len(obs) && obs[next].At.Before(since) {
			next++
		}
		for j, at := range times {
			want := start[app] + j + 1
			shows := func(o Observation) bool { return o.Healthy >= want }
			if down {
				want = start[app] - j - 1
				shows = func(o Observation) bool { return o.Healthy <= want }
			}
			for next < len(obs) && !shows(obs[next]) {
				next++
			}
			if next == len(obs) {
				last := "never reported"
				if len(obs) > 0 {
					last = fmt.Sprintf("last showed %d healthy", obs[len(obs)-1].Healthy)
				}
				return nil, fmt.Errorf("AppConfig %s: write %d of %d never showed (want %d healthy; %s)", app, j+1, len(times), want, last)
			}
			lags = append(lags, max(0, obs[next].At.Sub(at)))
		}
	}
	slices.Sort(lags)
	return lags, nil
}

// Percentile is the p-th percentile (0 < p <= 100) of sorted durations by the nearest-rank method:
// the smallest value at least p% of them are at or below. Zero for none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(float64(len(sorted)) * p / 100))
	return sorted[min(max(rank, 1), len(sorted))-1]
}
