package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ferry-mc/ferry/internal/testing/fleetsim"
)

// RequestStat is what kube-apiserver spent on one kind of request in a phase: how many it served and
// how long they took in all (its apiserver_request_duration_seconds), e.g. PATCH manifestworks/status.
type RequestStat struct {
	Request      string  `json:"request"`
	Count        float64 `json:"count"`
	TotalSeconds float64 `json:"totalSeconds"`
	// BodyBytes is the size of the requests' bodies in all (apiserver_request_body_size_bytes, by
	// resource and verb: the subresources of a resource together).
	BodyBytes float64 `json:"bodyBytes,omitempty"`
}

// requestTimes are kube-apiserver's request counts and total durations so far, by request.
type requestTimes map[string]RequestStat

// apiServerRequests scrapes kube-apiserver's own metrics for its request durations; long-running
// requests (WATCH) are left out, their duration is how long a client watched.
func (b *bench) apiServerRequests(ctx context.Context) (requestTimes, error) {
	raw, err := b.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver metrics: %w", err)
	}
	samples, err := fleetsim.ParseMetrics(strings.NewReader(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver metrics: %w", err)
	}
	out := requestTimes{}
	for _, s := range samples {
		if s.Name == "apiserver_request_body_size_bytes_sum" {
			key := bodyKey(s.Labels["verb"], s.Labels["resource"])
			r := out[key]
			r.Request, r.BodyBytes = key, r.BodyBytes+s.Value
			out[key] = r
			continue
		}
		if s.Name == "apiserver_flowcontrol_request_execution_seconds_sum" {
			key := flowKey(s.Labels["flow_schema"])
			r := out[key]
			r.Request, r.TotalSeconds = key, r.TotalSeconds+s.Value
			out[key] = r
			continue
		}
		if s.Name != "apiserver_request_duration_seconds_sum" && s.Name != "apiserver_request_duration_seconds_count" {
			continue
		}
		verb := s.Labels["verb"]
		if verb == "WATCH" || verb == "CONNECT" {
			continue
		}
		key := verb + " " + s.Labels["resource"]
		if sub := s.Labels["subresource"]; sub != "" {
			key += "/" + sub
		}
		r := out[key]
		r.Request = key
		if strings.HasSuffix(s.Name, "_sum") {
			r.TotalSeconds += s.Value
		} else {
			r.Count += s.Value
		}
		out[key] = r
	}
	return out, nil
}

// bodyKey is the key of the body sizes of requests of verb on resource, its subresources included.
// The body size metric says "patch", where the duration metric says "PATCH".
func bodyKey(verb, resource string) string {
	return "body " + strings.ToUpper(verb) + " " + resource
}

// flowKey is the key of the time kube-apiserver spent executing the requests of a flow schema of its
// priority and fairness. ferry-hub runs as deploy/hub's ServiceAccount ("service-accounts"); the
// benchmark and its simulated agents as an administrator ("exempt").
func flowKey(flowSchema string) string {
	return "flow " + flowSchema
}

// flowSeconds is the execution time of every flow schema, and of flowSchema's, between before and after.
func flowSeconds(before, after requestTimes, flowSchema string) (all, of float64) {
	for key, a := range after {
		if strings.HasPrefix(key, "flow ") {
			all += a.TotalSeconds - before[key].TotalSeconds
		}
	}
	key := flowKey(flowSchema)
	return all, after[key].TotalSeconds - before[key].TotalSeconds
}

// bodyBytes is the body bytes of requests of verb on resource between before and after.
func bodyBytes(before, after requestTimes, verb, resource string) float64 {
	key := bodyKey(verb, resource)
	return after[key].BodyBytes - before[key].BodyBytes
}

// topRequests are the n requests kube-apiserver spent most time on between before and after.
func topRequests(before, after requestTimes, n int) []RequestStat {
	var out []RequestStat
	for key, a := range after {
		d := RequestStat{Request: key, Count: a.Count - before[key].Count, TotalSeconds: a.TotalSeconds - before[key].TotalSeconds}
		if d.Count > 0 && !strings.HasPrefix(key, "body ") && !strings.HasPrefix(key, "flow ") {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(x, y RequestStat) int {
		switch {
		case x.TotalSeconds > y.TotalSeconds:
			return -1
		case x.TotalSeconds < y.TotalSeconds:
			return 1
		}
		return strings.Compare(x.Request, y.Request)
	})
	return out[:min(n, len(out))]
}
