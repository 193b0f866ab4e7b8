package main

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"
)

// RestartResult is a ferry-hub process that exited on its own during the run and was started again,
// as the kubelet restarts a Deployment's container.
type RestartResult struct {
	Hub string `json:"hub"`
	// AtSeconds is when it exited, from the start of the run; Phase the phase it was in.
	AtSeconds float64 `json:"atSeconds"`
	Phase     string  `json:"phase"`
	// Exit is how it ended and LastWords the end of its log.
	Exit      string `json:"exit"`
	LastWords string `json:"lastWords"`
}

// Restart backoff as the kubelet's: 10s, doubled after each restart, at most 5 minutes.
const (
	restartBackoff    = 10 * time.Second
	maxRestartBackoff = 5 * time.Minute
)

// scrapeEvery is how often a running ferry-hub's write count is read, so that a process that dies
// loses few writes from the count.
const scrapeEvery = 5 * time.Second

// supervise watches one ferry-hub process until ctx is done: a process that exits on its own is
// recorded and started again after the kubelet's backoff; past --max-hub-restarts, the run is
// cancelled with the reason (fail, naming the process and its last words).
func (b *bench) supervise(ctx context.Context, h *hubProcess, fail context.CancelCauseFunc) {
	backoff := cmp.Or(b.restartBackoff, restartBackoff)
	scrape := time.NewTicker(scrapeEvery)
	defer scrape.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-scrape.C:
			_, _ = h.scrape(ctx) // only to keep the count fresh; a failure is the exit seen next
			continue
		case <-h.Exited():
		}
		if ctx.Err() != nil || !h.ExitedOnItsOwn() {
			return // stopped by the benchmark
		}
		r := RestartResult{Hub: h.sampled, AtSeconds: time.Since(b.start).Seconds(), Phase: b.currentPhase(), Exit: h.State(),
			LastWords: h.LogTail(3)}
		restarts := b.recordRestart(r)
		b.logf("%s exited in phase %q (%s); its log %s ends:\n%s", h.Name, r.Phase, r.Exit, h.Log, indent(r.LastWords))
		if restarts > b.o.maxHubRestarts {
			fail(fmt.Errorf("ferry-hub exited %d times, more than --max-hub-restarts=%d; last %s (%s), its log %s ends:\n%s",
				restarts, b.o.maxHubRestarts, h.Name, r.Exit, h.Log, indent(r.LastWords)))
			return
		}
		b.logf("restarting %s in %s, as the kubelet would", h.Name, backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		h.restarted()
		if err := h.Restart(); err != nil {
			fail(fmt.Errorf("restart %s: %w", h.Name, err))
			return
		}
		b.sampler.Watch(h.sampled, h.PID())
		backoff = min(2*backoff, maxRestartBackoff)
	}
}

func (b *bench) recordRestart(r RestartResult) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.res.HubRestarts = append(b.res.HubRestarts, r)
	return len(b.res.HubRestarts)
}

func (b *bench) currentPhase() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.phaseName
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
