package agent

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What one eviction round does with an AppliedManifestWork, by what the caches show and the clock.
func TestNextEvictionStep(t *testing.T) {
	const grace = time.Hour
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	markedAgo := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(-d)} }
	cases := []struct {
		name      string
		delivered bool
		marked    *metav1.Time
		want      evictionStep
	}{
		{"delivered and not marked: nothing to do", true, nil, keepApplied},
		{"delivered again after it was marked: unmarked", true, markedAgo(2 * grace), unmarkEviction},
		{"no longer delivered: marked, the grace period starts", false, nil, markForEviction},
		{"within the grace period: kept", false, markedAgo(grace - time.Second), keepApplied},
		{"the grace period just over: evicted", false, markedAgo(grace), evictNow},
		{"long past the grace period: evicted", false, markedAgo(10 * grace), evictNow},
		{"marked by a clock ahead of ours: kept", false, markedAgo(-time.Minute), keepApplied},
	}
	for _, c := range cases {
		if got := nextEvictionStep(c.delivered, c.marked, now, grace); got != c.want {
			t.Errorf("%s: step %d, want %d", c.name, got, c.want)
		}
	}
}
