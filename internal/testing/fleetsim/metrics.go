package fleetsim

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Sample is one sample of a Prometheus text exposition: a metric's name, its labels and its value.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Samples are the samples of one scrape.
type Samples []Sample

// ScrapeMetrics reads the Prometheus metrics at url (a controller's http://host:port/metrics).
func ScrapeMetrics(ctx context.Context, url string) (Samples, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	s, err := ParseMetrics(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	return s, nil
}

// ParseMetrics reads the Prometheus text format: comments are skipped, and each sample line
// `name{label="value",...} value [timestamp]` is one Sample.
func ParseMetrics(r io.Reader) (Samples, error) {
	var out Samples
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d %q: %w", n, line, err)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

func parseSample(line string) (Sample, error) {
	s := Sample{Labels: map[string]string{}}
	end := strings.IndexAny(line, "{ ")
	if end <= 0 {
		return s, fmt.Errorf("no value")
	}
	s.Name, line = line[:end], line[end:]
	if strings.HasPrefix(line, "{") {
		rest, err := parseLabels(line[1:], s.Labels)
		if err != nil {
			return s, err
		}
		line = rest
	}
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return s, fmt.Errorf("no value")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, fmt.Errorf("value: %w", err)
	}
	s.Value = v
	return s, nil
}

// parseLabels reads `name="value",...}` into labels and returns what follows the brace. Values are
// quoted with \\, \" and \n escaped.
func parseLabels(in string, labels map[string]string) (string, error) {
	for {
		in = strings.TrimLeft(in, " ,")
		if strings.HasPrefix(in, "}") {
			return in[1:], nil
		}
		name, rest, ok := strings.Cut(in, "=")
		if !ok || !strings.HasPrefix(rest, `"`) {
			return "", fmt.Errorf("label %q: want name=\"value\"", in)
		}
		var value strings.Builder
		i := 1
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
				if rest[i] == 'n' {
					value.WriteByte('\n')
					continue
				}
			}
			value.WriteByte(rest[i])
		}
		if i >= len(rest) {
			return "", fmt.Errorf("label %s: unterminated value", name)
		}
		labels[strings.TrimSpace(name)] = value.String()
		in = rest[i+1:]
	}
}

// Sum adds the values of the samples of the named metric whose labels include every label of match.
func (s Samples) Sum(name string, match map[string]string) float64 {
	total := 0.0
	for _, sample := range s {
		if sample.Name != name {
			continue
		}
		matches := true
		for k, v := range match {
			matches = matches && sample.Labels[k] == v
		}
		if matches {
			total += sample.Value
		}
	}
	return total
}

// APIWrites counts the writes (POST, PUT, PATCH, DELETE) a controller built on controller-runtime has
// sent to the API server, from client-go's rest_client_requests_total, which counts every request
// that got an answer, by method and code.
func (s Samples) APIWrites() float64 {
	total := 0.0
	for _, method := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		total += s.Sum("rest_client_requests_total", map[string]string{"method": method})
	}
	return total
}

// QueueIdle says whether the named controller has nothing queued and nothing in progress
// (workqueue_depth and controller_runtime_active_workers are 0). A scrape without the controller's
// queue is an error: a renamed controller would otherwise look idle forever.
func (s Samples) QueueIdle(controller string) (bool, error) {
	if !slices.ContainsFunc(s, func(x Sample) bool { return x.Name == "workqueue_depth" && x.Labels["name"] == controller }) {
		return false, fmt.Errorf("no workqueue_depth of controller %q in the metrics", controller)
	}
	return s.Sum("workqueue_depth", map[string]string{"name": controller}) == 0 &&
		s.Sum("controller_runtime_active_workers", map[string]string{"controller": controller}) == 0, nil
}
