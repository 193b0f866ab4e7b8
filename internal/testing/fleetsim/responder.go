package fleetsim

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
)

// Responder plays every cluster's agent answering the hub: whenever a work the WorkTracker follows has
// a generation no report is about yet (the hub wrote it), it reports on that generation through its
// Agents, with the health that health says of the work, as ferry-agent reports once it has applied
// it. Only a work's newest generation is answered: one the hub replaces while it waits is skipped, as
// an agent that sees two writes at once applies the second. It keeps every report it wrote, so that
// a benchmark can tell what the hub was told and when.
type Responder struct {
	agents *Agents
	health func(*Work) Health
	queue  workqueue.TypedInterface[string]
	// busy counts the works being reported on now.
	busy atomic.Int64

	mu sync.Mutex
	// latest is the newest version seen of each work waiting for a report; answered the work (its
	// UID: a work deleted and created again starts its generations afresh) and generation last
	// reported on.
	latest   map[string]*Work
	answered map[string]answer
	reports  []Report
	err      error
}

type answer struct {
	uid        types.UID
	generation int64
}

// NewResponder returns a responder that reports through agents (their rate and concurrency bound it)
// the health that health says of each work; Start starts it.
func NewResponder(agents *Agents, health func(*Work) Health) *Responder {
	return &Responder{agents: agents, health: health, queue: workqueue.NewTyped[string](),
		latest: map[string]*Work{}, answered: map[string]answer{}}
}

// Start answers the works tracker follows until ctx is done: those waiting for a report now at once,
// and each new generation as the tracker sees it.
func (r *Responder) Start(ctx context.Context, tracker *WorkTracker) {
	cancel := tracker.Subscribe(r.offer)
	go func() {
		<-ctx.Done()
		cancel()
		r.queue.ShutDown()
	}()
	for range r.agents.concurrency {
		go func() {
			for r.next(ctx) {
			}
		}()
	}
}

// offer queues w when its generation has no report.
func (r *Responder) offer(w *Work) {
	if w.ReportedGeneration == w.Generation {
		return
	}
	r.mu.Lock()
	if old, ok := r.latest[w.Key()]; !ok || old.Generation <= w.Generation {
		r.latest[w.Key()] = w
	}
	r.mu.Unlock()
	r.queue.Add(w.Key())
}

// next reports on one queued work; false once the queue is shut down.
func (r *Responder) next(ctx context.Context) bool {
	key, shutdown := r.queue.Get()
	if shutdown {
		return false
	}
	r.busy.Add(1)
	defer r.busy.Add(-1)
	defer r.queue.Done(key)
	r.mu.Lock()
	w := r.latest[key]
	delete(r.latest, key)
	last := r.answered[key]
	answered := w == nil || (last.uid == w.UID && last.generation >= w.Generation)
	r.mu.Unlock()
	if answered {
		return true
	}
	rep, err := r.agents.Write(ctx, w, r.health(w))
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err == nil:
		if last := r.answered[key]; last.uid != w.UID || last.generation < w.Generation {
			r.answered[key] = answer{uid: w.UID, generation: w.Generation}
		}
		r.reports = append(r.reports, rep)
	case apierrors.IsNotFound(err), ctx.Err() != nil:
		// Deleted, as an agent finds a work gone; or the responder is stopping.
	case r.err == nil:
		r.err = err
	}
	return true
}

// Pending counts the works waiting for a report or being reported on, for a person watching: a work
// taken from the queue a moment ago may be missing from it. Whether every work has been answered is
// the tracker's to say (ReportedGeneration).
func (r *Responder) Pending() int { return r.queue.Len() + int(r.busy.Load()) }

// Reports are the reports written so far, in the order they were acknowledged.
func (r *Responder) Reports() []Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reports)
}

// Err is the first report that could not be written, if any.
func (r *Responder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}
