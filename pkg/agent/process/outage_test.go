package process

import (
	"context"
	"errors"
	"fmt"
	"k8s.io/apimachinery/pkg/util/wait"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// logLines collects what a logger writes, one entry per line.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{})
}

func (l *logLines) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func (l *logLines) waitFor(t *testing.T, n int) []string {
	t.Helper()
	var got []string
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		got = l.snapshot()
		return len(got) >= n, nil
	})
	if err != nil {
		t.Fatalf("wanted %d log lines within 10s, have %q", n, got)
	}
	return got
}

// refused is the error client-go returns when nothing listens at host.
func refused(host string) error {
	return fmt.Errorf("update status: %w", &url.Error{Op: "Put", URL: "https://" + host + "/apis/work.open-cluster-management.io/v1/namespaces/c1/manifestworks/w/status", Err: syscall.ECONNREFUSED})
}

// fakeServer is an endpoint whose answer the test switches.
type fakeServer struct{ up atomic.Bool }

func (s *fakeServer) probe(context.Context) error {
	if s.up.Load() {
		return nil
	}
	return &url.Error{Op: "Get", URL: "https://x/readyz", Err: syscall.ECONNREFUSED}
}

func newTestTracker(t *testing.T) (log logr.Logger, lines *logLines, hub, spoke *fakeServer) {
	lines = &logLines{}
	hub, spoke = &fakeServer{}, &fakeServer{}
	hub.up.Store(true)
	spoke.up.Store(true)
	tracker := newOutageTracker(t.Context(), lines.logger(),
		apiEndpoint{role: "hub", host: "127.0.0.1:6443", probe: hub.probe},
		apiEndpoint{role: "spoke", host: "127.0.0.1:7443", probe: spoke.probe})
	tracker.probeInterval = 10 * time.Millisecond
	return withOutageTracking(lines.logger(), tracker), lines, hub, spoke
}

func TestAnOutageOfTheHubIsLoggedOnceWhenItStartsAndOnceWhenItEnds(t *testing.T) {
	log, lines, hub, _ := newTestTracker(t)
	hub.up.Store(false)
	for i := range 200 {
		log.Error(refused("127.0.0.1:6443"), "reconcile ManifestWork", "work", fmt.Sprintf("w%d", i))
	}
	got := lines.waitFor(t, 1)
	if len(got) != 1 || !strings.Contains(got[0], "hub API server unreachable") || !strings.Contains(got[0], "connection refused") {
		t.Fatalf("during the outage the log has %q, want one line saying the hub API server is unreachable and why", got)
	}
	// Answers of the server while it starts, before it is ready, are part of the outage.
	log.Error(apierrors.NewServiceUnavailable("starting"), "reconcile ManifestWork")
	log.Error(apierrors.NewForbidden(schema.GroupResource{Resource: "manifestworks"}, "", errors.New("RBAC cache not synced")), "Failed to watch")
	hub.up.Store(true)
	got = lines.waitFor(t, 2)
	if len(got) != 2 || !strings.Contains(got[1], "hub API server reachable again") || !strings.Contains(got[1], `"failedRequests"=202`) {
		t.Fatalf("after the outage the log has %q, want a second line saying the hub is reachable again after 202 failed requests", got)
	}

	// Once it is over, errors are logged as they come.
	log.Error(apierrors.NewServiceUnavailable("busy"), "reconcile ManifestWork")
	log.Error(apierrors.NewConflict(schema.GroupResource{Resource: "manifestworks"}, "w", errors.New("changed")), "reconcile ManifestWork")
	if got := lines.waitFor(t, 4); len(got) != 4 {
		t.Errorf("errors after the outage: log has %q, want each logged", got)
	}
}

func TestAConnectionErrorWhileTheServerAnswersIsLoggedAsAnError(t *testing.T) {
	log, lines, _, _ := newTestTracker(t)
	log.Error(refused("127.0.0.1:7443"), "apply manifest")
	got := lines.waitFor(t, 1)
	if !strings.Contains(got[0], "request to API server failed, but it answers") || !strings.Contains(got[0], `"apiServer"="spoke"`) || !strings.Contains(got[0], "connection refused") {
		t.Errorf("log %q, want the error itself, naming the spoke", got)
	}
}

func TestErrorsOfOtherServersAndCancellationsAreNotAnOutage(t *testing.T) {
	log, lines, _, _ := newTestTracker(t)
	log.Error(refused("10.0.0.9:443"), "apply manifest")
	log.Error(&url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api", Err: context.Canceled}, "list")
	log.Error(apierrors.NewServiceUnavailable("no outage going on"), "apply manifest")
	log.Error(apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "s", errors.New("no RBAC rule")), "apply manifest")
	if got := lines.waitFor(t, 4); len(got) != 4 || strings.Contains(strings.Join(got, "\n"), "unreachable") {
		t.Errorf("log %q, want the four errors as they are", got)
	}
}

func TestOutagesOfHubAndSpokeAreTrackedApart(t *testing.T) {
	log, lines, hub, spoke := newTestTracker(t)
	hub.up.Store(false)
	spoke.up.Store(false)
	log.Error(refused("127.0.0.1:6443"), "watch")
	log.Error(refused("127.0.0.1:7443"), "watch")
	lines.waitFor(t, 2)
	spoke.up.Store(true)
	got := lines.waitFor(t, 3)
	if !strings.Contains(got[2], "spoke API server reachable again") {
		t.Errorf("log %q, want the spoke's outage to end on its own", got)
	}
	// Only the hub is down now: its outage takes a 503.
	log.Error(apierrors.NewServiceUnavailable("starting"), "watch")
	hub.up.Store(true)
	got = lines.waitFor(t, 4)
	if len(got) != 4 || !strings.Contains(got[3], "hub API server reachable again") {
		t.Errorf("log %q, want the hub's outage to end last and nothing else", got)
	}
}

// client-go's reflectors retry a refused watch quietly, telling of it only at V(4): that is enough to
// start the outage, while the rest of V(4) stays unprinted.
func TestARefusedWatchLoggedVerboselyStartsAnOutage(t *testing.T) {
	log, lines, hub, _ := newTestTracker(t)
	hub.up.Store(false)
	log.V(4).Info("Watch closed", "reflector", "informers.go:1")
	log.V(4).Info("Watch failed - backing off", "reflector", "informers.go:1", "err", refused("127.0.0.1:6443"))
	got := lines.waitFor(t, 1)
	if len(got) != 1 || !strings.Contains(got[0], "hub API server unreachable") {
		t.Errorf("log %q, want only the outage's line", got)
	}
}

// An API server that comes back answers a ServiceAccount 403 until its RBAC caches are filled: its
// outage goes on until the probe passes, or until the refusals have gone on for refusedGrace (a
// cluster that forbids the agent /readyz). Requests refused meanwhile are part of the outage.
func TestRefusalsWhileTheServerFillsItsCachesAreStillItsOutage(t *testing.T) {
	lines := &logLines{}
	var refusing, up atomic.Bool
	probe := func(context.Context) error {
		switch {
		case up.Load():
			return nil
		case refusing.Load():
			return apierrors.NewForbidden(schema.GroupResource{}, "", errors.New(`clusterrole.rbac.authorization.k8s.io "system:public-info-viewer" not found`))
		}
		return &url.Error{Op: "Get", URL: "https://x/readyz", Err: syscall.ECONNREFUSED}
	}
	var clock atomic.Int64 // seconds past the start
	start := time.Now()
	tracker := newOutageTracker(t.Context(), lines.logger(), apiEndpoint{role: "spoke", host: "127.0.0.1:7443", probe: probe})
	tracker.probeInterval = 10 * time.Millisecond
	tracker.now = func() time.Time { return start.Add(time.Duration(clock.Load()) * time.Second) }
	log := withOutageTracking(lines.logger(), tracker)

	log.Error(refused("127.0.0.1:7443"), "apply manifest")
	if got := lines.waitFor(t, 1); !strings.Contains(got[0], "spoke API server unreachable") {
		t.Fatalf("log %q, want the outage", got)
	}
	refusing.Store(true)
	log.Error(apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "a", errors.New("RBAC cache not synced")), "apply manifest")
	// Many probes see the refusal while the clock stands: the outage goes on, nothing more is logged.
	window := time.After(300 * time.Millisecond) // 30 probe intervals
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for watching := true; watching; {
		select {
		case <-window:
			watching = false
		case <-tick.C:
		}
		if got := lines.snapshot(); len(got) != 1 {
			t.Fatalf("while the server refuses the probe for less than %s, the log has %q, want only the outage's line", refusedGrace, got)
		}
	}
	clock.Store(int64(refusedGrace / time.Second))
	if got := lines.waitFor(t, 2); !strings.Contains(got[1], "spoke API server reachable again") || !strings.Contains(got[1], `"failedRequests"=2`) {
		t.Fatalf("after %s of refusals the log has %q, want the server reachable again after 2 failed requests", refusedGrace, got)
	}
}
