package process

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/ferry-mc/ferry/pkg/agent"
)

// An API server that stops answering makes every client of the agent fail at once: each informer's
// reflector logs each failed list and watch, and each reconcile that touches it logs its error, for as
// long as the outage lasts. That buries the one fact a person needs — "the hub is down since 12:03:07,
// the agent is waiting for it" — under hundreds of lines. An outageTracker turns the errors that only say
// "cannot reach API server X" into two lines per outage: one when it starts, one when it ends.

// apiEndpoint is an API server the agent talks to.
type apiEndpoint struct {
	// role names it in the log: "hub" or "spoke".
	role string
	// host is host:port of its URL, as url.Error reports it.
	host string
	// probe makes one cheap request to it and returns its error: nil, or an error that is not a
	// connection error, means the server answers.
	probe func(ctx context.Context) error
}

// outageState is what the tracker knows about one endpoint.
type outageState int

const (
	reachable   outageState = iota
	checking                // a request failed to connect; the first probe is under way
	unreachable             // the probe failed too: an outage, logged, probed until it ends
)

// outageTracker follows the reachability of the agent's API servers from the connection errors its
// clients report, and logs each outage once.
type outageTracker struct {
	ctx           context.Context // bounds the probes
	log           logr.Logger
	probeInterval time.Duration
	now           func() time.Time

	mu        sync.Mutex
	endpoints []*endpointOutage
}

// endpointOutage is an endpoint and the outage it is in, if any.
type endpointOutage struct {
	apiEndpoint
	state    outageState
	since    time.Time
	firstErr error
	failures int // connection errors reported during this outage
	// refusedSince: when the probe's credential started being refused without a pause (zero: it is
	// not refused). Only the endpoint's follow goroutine reads and writes it.
	refusedSince time.Time
}

// refusedGrace is how long a refused probe must go on before the endpoint counts as back. An API
// server that has just started answers a ServiceAccount 403 until its RBAC caches are filled (a
// second or two): that is still its outage. A server that keeps refusing the probe (a cluster that
// forbids /readyz to the agent) is back, and says so after this.
const refusedGrace = 10 * time.Second

func newOutageTracker(ctx context.Context, log logr.Logger, endpoints ...apiEndpoint) *outageTracker {
	t := &outageTracker{ctx: ctx, log: log, probeInterval: time.Second, now: time.Now}
	for _, e := range endpoints {
		t.endpoints = append(t.endpoints, &endpointOutage{apiEndpoint: e})
	}
	return t
}

// absorb takes an error a client reported. If the error says an API server of the agent could not be
// reached, the tracker owns it: it starts or continues that server's outage and absorb returns true,
// and the caller logs nothing. Otherwise absorb returns false and the caller logs the error as usual.
//
// An answer of the server carries no address. A 503, 401 or 403 is taken as part of an outage while
// exactly one endpoint is in one: an API server that starts again answers before its storage and its
// authentication and authorization caches are ready, with exactly these. What it still refuses once
// it is ready is logged then, as the failed request is retried.
func (t *outageTracker) absorb(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var e *endpointOutage
	if host, ok := agent.ConnectionErrorHost(err); ok {
		e = t.endpointFor(host)
	} else if isStartingAnswer(err) {
		e = t.onlyEndpointInOutage()
	}
	if e == nil {
		return false
	}
	e.failures++
	if e.state == reachable {
		e.state, e.since, e.firstErr, e.failures = checking, t.now(), err, 1
		go t.follow(e)
	}
	return true
}

func (t *outageTracker) endpointFor(host string) *endpointOutage {
	for _, e := range t.endpoints {
		if e.host == host {
			return e
		}
	}
	return nil
}

func (t *outageTracker) onlyEndpointInOutage() *endpointOutage {
	var found *endpointOutage
	for _, e := range t.endpoints {
		if e.state == reachable {
			continue
		}
		if found != nil {
			return nil
		}
		found = e
	}
	return found
}

// follow probes an endpoint after a failed request: if it answers at once, the failure was a blip and
// is logged as the error it is; otherwise the outage is logged, and logged again when it ends.
func (t *outageTracker) follow(e *endpointOutage) {
	if t.probe(e) {
		t.mu.Lock()
		err, n := e.firstErr, e.failures
		e.state, e.firstErr = reachable, nil
		t.mu.Unlock()
		t.log.Error(err, "request to API server failed, but it answers", "apiServer", e.role, "host", e.host, "failedRequests", n)
		return
	}
	t.mu.Lock()
	e.state = unreachable
	since, err := e.since, e.firstErr
	t.mu.Unlock()
	t.log.Info(e.role+" API server unreachable; retrying quietly until it answers",
		"host", e.host, "since", since.Format(time.RFC3339), "error", err.Error())

	ticker := time.NewTicker(t.probeInterval)
	defer ticker.Stop()
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-ticker.C:
		}
		if !t.probe(e) {
			continue
		}
		t.mu.Lock()
		n := e.failures
		e.state, e.firstErr = reachable, nil
		t.mu.Unlock()
		t.log.Info(e.role+" API server reachable again",
			"host", e.host, "after", t.now().Sub(since).Round(100*time.Millisecond).String(), "failedRequests", n)
		return
	}
}

// isStartingAnswer reports whether err is an answer an API server gives while it starts.
func isStartingAnswer(err error) bool {
	return apierrors.IsServiceUnavailable(err) || apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
}

// probe reports whether the endpoint is back: its readiness check passes, or it has refused the
// probe's credential for refusedGrace, which takes a server whose authentication and authorization
// work and are settled. Until then (no connection, /readyz failing with a 500 while it starts, or
// refusals while its caches fill) it is not.
func (t *outageTracker) probe(e *endpointOutage) bool {
	ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
	defer cancel()
	err := e.probe(ctx)
	if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
		e.refusedSince = time.Time{}
		return err == nil
	}
	if e.refusedSince.IsZero() {
		e.refusedSince = t.now()
	}
	return t.now().Sub(e.refusedSince) >= refusedGrace
}

// outageSink passes every log call to the sink it wraps, except errors the outage tracker absorbs. It
// also reads the verbose messages the wrapped sink would drop, for the errors in them: client-go's
// reflectors report a refused watch only at V(4) ("Watch failed - backing off") and retry it quietly,
// and in a steady state that is all that tells of an outage.
type outageSink struct {
	logr.LogSink
	// errors is LogSink one frame deeper: Error passes through outageSink's own method, the other
	// calls do not.
	errors  logr.LogSink
	outages *outageTracker
}

// observedVerbosity is the highest level read for errors whatever the wrapped sink prints.
const observedVerbosity = 4

func newOutageSink(sink logr.LogSink, t *outageTracker) outageSink {
	errs := sink
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		errs = cd.WithCallDepth(1) // a copy: sink itself is unchanged
	}
	return outageSink{LogSink: sink, errors: errs, outages: t}
}

// Init does nothing: the wrapped sink was initialised with the logger it came from, and initialising
// it again would change that logger too.
func (s outageSink) Init(logr.RuntimeInfo) {}

func (s outageSink) Enabled(level int) bool {
	return level <= observedVerbosity || s.LogSink.Enabled(level)
}

func (s outageSink) Info(level int, msg string, keysAndValues ...any) {
	for i := 1; i < len(keysAndValues); i += 2 {
		if err, ok := keysAndValues[i].(error); ok && s.outages.absorb(err) {
			return
		}
	}
	if s.LogSink.Enabled(level) {
		s.errors.Info(level, msg, keysAndValues...)
	}
}

func (s outageSink) Error(err error, msg string, keysAndValues ...any) {
	if s.outages.absorb(err) {
		return
	}
	s.errors.Error(err, msg, keysAndValues...)
}

func (s outageSink) WithValues(keysAndValues ...any) logr.LogSink {
	return outageSink{LogSink: s.LogSink.WithValues(keysAndValues...), errors: s.errors.WithValues(keysAndValues...), outages: s.outages}
}

func (s outageSink) WithName(name string) logr.LogSink {
	return outageSink{LogSink: s.LogSink.WithName(name), errors: s.errors.WithName(name), outages: s.outages}
}

// WithCallDepth keeps the caller's file and line right through the wrapper.
func (s outageSink) WithCallDepth(depth int) logr.LogSink {
	cd, ok := s.LogSink.(logr.CallDepthLogSink)
	if !ok {
		return s
	}
	out := newOutageSink(cd.WithCallDepth(depth), s.outages)
	return out
}

// withOutageTracking returns a logger that writes to base, except connection errors of the tracked
// endpoints, which the tracker turns into a line when an outage starts and one when it ends.
func withOutageTracking(base logr.Logger, t *outageTracker) logr.Logger {
	sink := base.GetSink()
	if sink == nil {
		return base
	}
	return logr.New(newOutageSink(sink, t))
}
