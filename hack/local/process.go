package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/ferry-mc/ferry/internal/testing/childproc"
)

// process is a ferry-hub or ferry-agent binary running for one cluster.
type process struct {
	*childproc.Process
	// health and metrics are the host:port it serves /readyz and /metrics on.
	health, metrics string
}

// startProcess starts cmd, called name in ferry-local's log, with its output in logPath and its pid
// beside it (<name>.pid), for a person or a test to stop this one process.
func startProcess(cmd *exec.Cmd, name, logPath, health, metrics string) (*process, error) {
	p, err := childproc.Start(cmd, name, logPath)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(strings.TrimSuffix(logPath, ".log")+".pid", []byte(strconv.Itoa(p.PID())+"\n"), 0o600); err != nil {
		return nil, errors.Join(fmt.Errorf("pid file of %s: %w", name, err), p.Kill())
	}
	return &process{Process: p, health: health, metrics: metrics}, nil
}

// stopGrace is how long each binary gets to finish what it is doing when ferry-local stops.
const stopGrace = 10 * time.Second

// stopProcesses stops the processes, giving each stopGrace to finish what it is doing.
func stopProcesses(procs []*process) error {
	all := make([]*childproc.Process, 0, len(procs))
	for _, p := range procs {
		all = append(all, p.Process)
	}
	return childproc.StopAll(all, stopGrace)
}

// readyTimeout bounds how long ferry-local waits for a binary's /readyz, as a readiness probe that
// never passes would keep a pod out of service.
const readyTimeout = 2 * time.Minute

// waitReady waits for each process's /readyz, as the kubelet's readiness probe does; a process that
// exits first fails it at once, with the end of its log.
func waitReady(ctx context.Context, procs []*process) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for _, p := range procs {
		if err := p.WaitReady(ctx, p.health); err != nil {
			return err
		}
		fmt.Printf("%s ready: http://%s/readyz, metrics http://%s/metrics, log %s\n", p.Name, p.health, p.metrics, p.Log)
	}
	return nil
}
