package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// cpuLoadName is --cpu-load's process in the sampler and the result.
const cpuLoadName = "cpu-load"

// burnPeriod is the slice of time a burner is busy for its share of and idle for the rest: short
// enough that the API server meets the load at every request, long enough to cost little switching.
const burnPeriod = 10 * time.Millisecond

// startCPULoad starts --cpu-load: bench-fleet's own binary as a busy loop (burnerEnv), a process of its
// own beside the hub, keeping cores of a processor busy for the whole run — a busier machine, the same on every
// machine. A process of its own so that its time is neither the benchmark's nor the hub's, and the
// sampler shows what it took.
func (b *bench) startCPULoad() error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--cpu-load: find bench-fleet's binary: %w", err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), burnerEnv+"="+strconv.FormatFloat(b.o.cpuLoad, 'f', -1, 64))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("--cpu-load: start the busy loop: %w", err)
	}
	b.sampler.Watch(cpuLoadName, cmd.Process.Pid)
	b.logf("cpu load: %s busy beside the hub (process %d)", cores(b.o.cpuLoad), cmd.Process.Pid)
	b.cleanup = append(b.cleanup, func() error {
		_ = cmd.Process.Kill()
		var exit *exec.ExitError
		if err := cmd.Wait(); err != nil && !errors.As(err, &exit) {
			return fmt.Errorf("--cpu-load: %w", err)
		}
		return nil
	})
	return nil
}

// cores writes a number of processor cores.
func cores(n float64) string {
	if n == 1 {
		return "1 core"
	}
	return strconv.FormatFloat(n, 'f', -1, 64) + " cores"
}

// burnerEnv, set to a number of cores in bench-fleet's environment, makes the process the busy loop
// of --cpu-load instead of the benchmark (runAsBurner): the same binary, so that --cpu-load needs
// nothing beside it, and a test binary that runs the benchmark can be its own burner too (TestMain).
const burnerEnv = "BENCH_FLEET_BURN_CORES"

// runAsBurner, when burnerEnv is set, keeps its cores busy until the process is killed, and does not
// return; otherwise it returns at once.
func runAsBurner() {
	v := os.Getenv(burnerEnv)
	if v == "" {
		return
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil || n <= 0 {
		fmt.Fprintf(os.Stderr, "bench-fleet: %s=%q: want a number of cores above 0\n", burnerEnv, v)
		os.Exit(2)
	}
	burn(context.Background(), n)
	os.Exit(0)
}

// burn keeps n cores busy until ctx is done: ceil(n) loops, each busy for its share of every
// burnPeriod and asleep for the rest.
func burn(ctx context.Context, n float64) {
	loops := int(math.Ceil(n))
	busy := time.Duration(float64(burnPeriod) * n / float64(loops))
	var wg sync.WaitGroup
	for range loops {
		wg.Go(func() {
			for ctx.Err() == nil {
				start := time.Now()
				for time.Since(start) < busy {
				}
				time.Sleep(burnPeriod - busy)
			}
		})
	}
	wg.Wait()
}
