package process

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The probes the Deployment points at: /healthz and /livez answer while the process runs; /readyz
// only while the agent stands by for the Lease or leads with its caches in sync, and says which check
// failed. Each check answers on its own path too.
func TestHealthHandlerAnswersTheProbes(t *testing.T) {
	var ready readiness
	h := healthHandler(&ready)
	status := func(path string) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code
	}
	for _, path := range []string{"/healthz", "/livez", "/healthz/ping"} {
		if got := status(path); got != http.StatusOK {
			t.Errorf("%s: %d, want 200 while the process runs", path, got)
		}
	}
	for _, path := range []string{"/readyz", "/readyz/caches"} {
		if got := status(path); got < 400 {
			t.Errorf("%s before the caches synced: %d, want a failure", path, got)
		}
	}
	ready.standby.Store(true)
	if got := status("/readyz"); got != http.StatusOK {
		t.Errorf("/readyz standing by for the Lease: %d, want 200", got)
	}
	ready.standby.Store(false)
	ready.synced.Store(true)
	if got := status("/readyz/caches"); got != http.StatusOK {
		t.Errorf("/readyz/caches leading with caches in sync: %d, want 200", got)
	}
	rec := httptest.NewRecorder()
	ready.synced.Store(false)
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz?verbose", nil))
	if body := rec.Body.String(); !containsAll(body, "caches", "failed") {
		t.Errorf("/readyz?verbose does not name the failed check: %q", body)
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
