package fleetsim

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/retry"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
)

// Agents play the agents of every cluster of the fleet at once: they write ManifestWork status through
// the status subresource, as ferry-agent does, at a bounded rate and with a bounded number of writes in
// flight, so that what a benchmark measures is the hub's answer to a known load.
type Agents struct {
	client      workclient.Interface
	limiter     flowcontrol.RateLimiter
	concurrency int
	written     atomic.Int64
}

// DefaultAgentConcurrency is how many writers Agents have unless told otherwise.
const DefaultAgentConcurrency = 64

// AgentOptions configures NewAgents.
type AgentOptions struct {
	// Rate is how many status writes a second the fleet sends at most; it must be positive.
	Rate float64
	// Concurrency is how many writers there are, each waiting for the rate limit or for its write;
	// default 64. At 100,000 works a status write took a busy local hub 200–250 ms on average, longer
	// at the tail: 32 writers reached only 72–77 of 100 writes a second asked.
	Concurrency int
}

// NewAgents returns agents that write through client (give it a FastConfig: the limit is Rate).
func NewAgents(client workclient.Interface, opts AgentOptions) (*Agents, error) {
	if opts.Rate <= 0 {
		return nil, fmt.Errorf("agents: rate %v: want a positive number of writes a second", opts.Rate)
	}
	// A burst of one: the writes come evenly spaced, so that the hub sees the rate and not bursts.
	return &Agents{client: client, limiter: flowcontrol.NewTokenBucketRateLimiter(float32(opts.Rate), 1),
		concurrency: cmp.Or(opts.Concurrency, DefaultAgentConcurrency)}, nil
}

// Report is one status write of a simulated agent: the work as it reported on it, what it said, and
// when.
type Report struct {
	// Work is the work reported on: its generation and revision are the report's.
	Work   *Work
	Health Health
	// Transition is the lastTransitionTime of every condition written (whole seconds, as the API
	// stores it): the hub counts how long the work has been healthy from it.
	Transition time.Time
	// Sent is when the write left, past the rate limit; Acked when the API server acknowledged it.
	Sent, Acked time.Time
}

// Write writes the status Status(w, h) to the work w, waiting for the rate limit first. The write is
// a merge patch of the whole status: it replaces what the agent reported before, as the agent's
// update does, without a read first and without conflicting with the hub's writes of the spec. A
// work written for a generation the hub has since replaced reports on the old one, as a real agent
// that has not caught up does. Transient API errors (throttling, timeouts) are retried.
func (a *Agents) Write(ctx context.Context, w *Work, h Health) (Report, error) {
	if err := a.limiter.Wait(ctx); err != nil {
		return Report{}, fmt.Errorf("status of ManifestWork %s: %w", w.Key(), err)
	}
	r := Report{Work: w, Health: h, Sent: time.Now()}
	status := Status(w, h, r.Sent)
	r.Transition = r.Sent.Truncate(time.Second) // as Status writes it
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return Report{}, fmt.Errorf("status of ManifestWork %s: %w", w.Key(), err)
	}
	err = retry.OnError(wait.Backoff{Steps: 5, Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1}, transient, func() error {
		_, err := a.client.WorkV1().ManifestWorks(w.Namespace).Patch(ctx, w.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		return err
	})
	if err != nil {
		return Report{}, fmt.Errorf("write %s status of ManifestWork %s: %w", h, w.Key(), err)
	}
	r.Acked = time.Now()
	a.written.Add(1)
	return r, nil
}

// Written counts the writes the agents have had acknowledged so far, for a person watching a long
// batch go.
func (a *Agents) Written() int64 { return a.written.Load() }

// WriteAll writes status h to every work, at the agents' rate, and returns when each write was
// acknowledged, by the work's index. The first failure stops the rest.
func (a *Agents) WriteAll(ctx context.Context, works []*Work, h Health) ([]time.Time, error) {
	done := make([]time.Time, len(works))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(a.concurrency)
	for i, w := range works {
		g.Go(func() error {
			r, err := a.Write(ctx, w, h)
			done[i] = r.Acked
			return err
		})
	}
	return done, g.Wait()
}

// transient errors are worth another try: the API server was busy, not the write wrong.
func transient(err error) bool {
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err)
}
