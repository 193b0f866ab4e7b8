package fleetsim

import (
	"strings"
	"testing"
)

const exposition = `# HELP rest_client_requests_total Number of HTTP requests, partitioned by status code, method, and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:3456",method="GET"} 1200
rest_client_requests_total{code="200",host="127.0.0.1:3456",method="PATCH"} 30
rest_client_requests_total{code="201",host="127.0.0.1:3456",method="POST"} 12
rest_client_requests_total{code="409",host="127.0.0.1:3456",method="PUT"} 2
rest_client_requests_total{code="200",host="127.0.0.1:3456",method="PUT"} 5
rest_client_requests_total{code="200",host="127.0.0.1:3456",method="DELETE"} 1
rest_client_requests_total{code="200",host="127.0.0.1:3456",method="WATCH"} 9
workqueue_depth{controller="appconfigs",name="appconfigs"} 0
workqueue_depth{controller="revisions",name="revisions"} 3
controller_runtime_active_workers{controller="appconfigs"} 0
odd_label{path="a \"quoted\" \\ back\nslash, and } brace"} 1.5e+06 1700000000000
go_goroutines 42
`

func TestParseMetricsCountsWrites(t *testing.T) {
	s, err := ParseMetrics(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	// Answered writes of every code count: a conflict cost the API server as much.
	if got := s.APIWrites(); got != 50 {
		t.Errorf("writes = %v, want 50 (PATCH 30 + POST 12 + PUT 7 + DELETE 1)", got)
	}
	if got := s.Sum("go_goroutines", nil); got != 42 {
		t.Errorf("go_goroutines = %v, want 42", got)
	}
	if got := s.Sum("odd_label", map[string]string{"path": "a \"quoted\" \\ back\nslash, and } brace"}); got != 1.5e6 {
		t.Errorf("odd_label with escapes = %v, want 1.5e6", got)
	}
}

func TestQueueIdle(t *testing.T) {
	s, err := ParseMetrics(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	if idle, err := s.QueueIdle("appconfigs"); err != nil || !idle {
		t.Errorf("appconfigs idle = %t, %v; want true", idle, err)
	}
	if idle, err := s.QueueIdle("revisions"); err != nil || idle {
		t.Errorf("revisions idle = %t, %v; want false (3 queued)", idle, err)
	}
	if _, err := s.QueueIdle("renamed"); err == nil {
		t.Error("a controller without metrics reads as idle")
	}
}

func TestParseMetricsRefusesGarbage(t *testing.T) {
	for _, bad := range []string{`x{a="1"`, `x{a=1} 2`, `x`, `x{a="1"} notanumber`} {
		if _, err := ParseMetrics(strings.NewReader(bad + "\n")); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
