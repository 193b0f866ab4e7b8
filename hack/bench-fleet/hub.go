package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferry-mc/ferry/internal/testing/childproc"
	"github.com/ferry-mc/ferry/internal/testing/deployrunner"
	"github.com/ferry-mc/ferry/internal/testing/fleetsim"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

// hubProcess is one ferry-hub process: the hub, or one shard of it.
type hubProcess struct {
	*childproc.Process
	// sampled is its name in the sampler and the result: ferry-hub, or ferry-hub-<i> of a shard.
	sampled string
	// health and metrics are the host:port it serves /readyz and /metrics on.
	health, metrics string

	mu sync.Mutex
	// writes is its API writes as last scraped from the current run; earlierWrites those of the runs
	// before a restart, whose counters started again from zero.
	writes, earlierWrites float64
}

// scrape reads the process's metrics, keeping its write count.
func (h *hubProcess) scrape(ctx context.Context) (fleetsim.Samples, error) {
	s, err := fleetsim.ScrapeMetrics(ctx, "http://"+h.metrics+"/metrics")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.Name, err)
	}
	h.mu.Lock()
	h.writes = max(h.writes, s.APIWrites())
	h.mu.Unlock()
	return s, nil
}

// totalWrites is the process's API writes over all its runs, as last scraped.
func (h *hubProcess) totalWrites() float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.earlierWrites + h.writes
}

// restarted starts the count of a new run.
func (h *hubProcess) restarted() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.earlierWrites += h.writes
	h.writes = 0
}

// hubReadyTimeout bounds the wait for ferry-hub's /readyz, as a readiness probe that never passes
// would keep a pod out of service.
const hubReadyTimeout = 2 * time.Minute

// startHubs installs deploy/hub on the hub, all but its Deployment, and runs o.hubShards ferry-hub
// processes as that Deployment's container: its args and env, as its ServiceAccount, so that what is
// measured has exactly deploy/hub's flags and RBAC. Only what a process on this machine cannot take
// from a pod differs (health and metrics on loopback ports, a kubeconfig for the in-cluster
// configuration), plus --hub-arg and the shard flags. It returns what it started, also on error, for
// the caller to stop.
func startHubs(ctx context.Context, env *localcluster.Environment, o *options) ([]*hubProcess, error) {
	extra, err := hubArgOverrides(o.hubArgs)
	if err != nil {
		return nil, err
	}
	// In the environment's directory, which goes with it.
	hub, err := deployrunner.InstallHub(ctx, o.deployDir, env.Hub.Name, env.Hub.Config, filepath.Join(env.Dir, "ferry-hub.kubeconfig"))
	if err != nil {
		return nil, err
	}
	binary, err := filepath.Abs(o.hubBinary)
	if err != nil {
		return nil, err
	}
	// .local/ does not exist on a clean clone.
	if err := os.MkdirAll(filepath.Dir(o.hubLog), 0o755); err != nil {
		return nil, fmt.Errorf("directory of --hub-log: %w", err)
	}
	var started []*hubProcess
	for i := range o.hubShards {
		overrides := extra
		name, logPath := "ferry-hub", o.hubLog
		if o.hubShards > 1 {
			overrides = append(slices.Clip(extra), deployrunner.Add("shard-index", strconv.Itoa(i)), deployrunner.Add("shard-count", strconv.Itoa(o.hubShards)))
			name = fmt.Sprintf("ferry-hub-%d", i)
			ext := filepath.Ext(o.hubLog)
			logPath = fmt.Sprintf("%s-%d%s", strings.TrimSuffix(o.hubLog, ext), i, ext)
		}
		cmd, health, metrics, err := hub.Command(binary, strconv.Itoa(i), overrides...)
		if err != nil {
			return started, err
		}
		p, err := childproc.Start(cmd, fmt.Sprintf("%s as %s", name, hub.User), logPath)
		if err != nil {
			return started, err
		}
		sampled := hubName
		if o.hubShards > 1 {
			sampled = fmt.Sprintf("%s-%d", hubName, i)
		}
		started = append(started, &hubProcess{Process: p, sampled: sampled, health: health, metrics: metrics})
	}
	ctx, cancel := context.WithTimeout(ctx, hubReadyTimeout)
	defer cancel()
	for _, p := range started {
		if err := p.WaitReady(ctx, p.health); err != nil {
			return started, err
		}
	}
	return started, nil
}

// hubArgOverrides turns --hub-arg values (--flag=value, or --flag for true) into overrides of
// deploy/hub's args: the flag's value is replaced when the Deployment carries it, appended otherwise.
func hubArgOverrides(args []string) ([]deployrunner.Override, error) {
	var out []deployrunner.Override
	for _, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || name == "" {
			return nil, fmt.Errorf("--hub-arg %q: want --flag=value or --flag", a)
		}
		if !hasValue {
			value = "true"
		}
		out = append(out, deployrunner.Add(name, value))
	}
	return out, nil
}

// hubStopGrace is how long ferry-hub gets to finish what it is doing when the benchmark ends.
const hubStopGrace = 10 * time.Second

func stopHubs(hubs []*hubProcess) error {
	procs := make([]*childproc.Process, 0, len(hubs))
	for _, h := range hubs {
		procs = append(procs, h.Process)
	}
	return childproc.StopAll(procs, hubStopGrace)
}

// hubWrites is how many writes the ferry-hub processes have sent to the API server so far, over all
// their runs. A process that cannot be scraped now (it is restarting) counts what was last seen of it.
func hubWrites(ctx context.Context, hubs []*hubProcess) float64 {
	total := 0.0
	for _, h := range hubs {
		_, _ = h.scrape(ctx)
		total += h.totalWrites()
	}
	return total
}
