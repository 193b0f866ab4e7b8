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

// topRequests are the n requests kube-apiserver spent most time on between before and after.
func topRequests(before, after requestTimes, n int) []RequestStat {
	var out []RequestStat
	for key, a := range after {
		d := RequestStat{Request: key, Count: a.Count - before[key].Count, TotalSeconds: a.TotalSeconds - before[key].TotalSeconds}
		if d.Count > 0 {
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
