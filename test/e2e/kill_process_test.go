package e2e

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// killSeed is the seed of the random kill points: FERRY_KILL_SEED when set, to replay a run, else the
// clock. It is logged either way.
func killSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FERRY_KILL_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("FERRY_KILL_SEED=%q: %v", s, err)
		}
	}
	t.Logf("kill points seeded with %d (replay with FERRY_KILL_SEED=%d)", seed, seed)
	return seed
}

// randomDelay is a duration in [0, upTo) drawn from rng: when, after a change starts, the process is
// killed. Waiting it out is the point of the test (the kill lands somewhere in the middle of the work),
// not a wait for a result.
func randomDelay(rng *rand.Rand, upTo time.Duration) time.Duration {
	return time.Duration(rng.Int64N(int64(upTo)))
}

// killDuring runs change (which writes to the hub) and, a random delay after it starts, kills the
// process with SIGKILL; once both are done it calls whileDown and starts the process again. It returns
// the delay.
func killDuring(t *testing.T, p *ferryProcess, rng *rand.Rand, upTo time.Duration, change func(ctx context.Context) error, whileDown func()) time.Duration {
	t.Helper()
	delay := randomDelay(rng, upTo)
	done := make(chan error, 1)
	go func() { done <- change(t.Context()) }()
	timer := time.NewTimer(delay)
	defer timer.Stop()
	<-timer.C
	p.kill()
	if err := <-done; err != nil {
		t.Fatalf("change while %s was killed: %v", p.Name, err)
	}
	whileDown()
	p.start()
	return delay
}

// converge polls check until it reports no problem, up to timeout. check returns the problems that
// may still resolve (not converged yet) and the violations that cannot (an object re-created, so its
// UID changed): a violation fails the test at once.
func converge(t *testing.T, what string, timeout time.Duration, p *ferryProcess, check func(ctx context.Context) (problems, violations []string, err error)) {
	t.Helper()
	var last []string
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if !p.Running() {
			t.Fatalf("%s: %s exited on its own (run %d): %s", what, p.Name, p.Runs(), p.State())
		}
		problems, violations, err := check(ctx)
		if err != nil {
			last = []string{err.Error()} // an API error: try again
			return false, nil
		}
		if len(violations) > 0 {
			t.Fatalf("%s: %d violations:\n  %s", what, len(violations), joinFirst(violations, 20))
		}
		last = problems
		return len(problems) == 0, nil
	})
	if err != nil {
		t.Fatalf("%s: not converged within %s; %d problems left:\n  %s", what, timeout, len(last), joinFirst(last, 20))
	}
}

// joinFirst joins the first n lines, saying how many more there are.
func joinFirst(lines []string, n int) string {
	out := ""
	for i, l := range lines {
		if i == n {
			return out + "\n  ... and " + strconv.Itoa(len(lines)-n) + " more"
		}
		if i > 0 {
			out += "\n  "
		}
		out += l
	}
	return out
}
