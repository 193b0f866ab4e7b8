package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// process is a ferry-hub or ferry-agent binary running for one cluster.
type process struct {
	// name says which binary runs for which cluster and as whom, for ferry-local's log.
	name string
	cmd  *exec.Cmd
	// exited is closed when the process has exited.
	exited chan struct{}
	// health and metrics are the host:port it serves /readyz and /metrics on.
	health, metrics string
	// log is the file its stdout and stderr go to.
	log string
}

// startProcess starts cmd with its output in logPath.
func startProcess(cmd *exec.Cmd, name, logPath, health, metrics string) (*process, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("log of %s: %w", name, err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	// Ends with this process, however it ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", name, cmd.Path, err)
	}
	// Its pid beside its log, for a person or a test to stop this one process.
	if err := os.WriteFile(strings.TrimSuffix(logPath, ".log")+".pid", []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o600); err != nil {
		_ = cmd.Process.Kill()
		return nil, err
	}
	p := &process{name: name, cmd: cmd, exited: make(chan struct{}), health: health, metrics: metrics, log: logPath}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// stopProcesses stops the processes, giving each a few seconds to finish what it is doing.
func stopProcesses(procs []*process) error {
	var errs []error
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
			errs = append(errs, fmt.Errorf("%s did not stop within 10s; killed it", p.name))
		}
	}
	return errors.Join(errs...)
}

// readyTimeout bounds how long ferry-local waits for a binary's /readyz, as a readiness probe that
// never passes would keep a pod out of service.
const readyTimeout = 2 * time.Minute

// waitReady polls each process's /readyz, as the kubelet's readiness probe does, until it answers
// 200; a process that exits first fails it at once, with the end of its log.
func waitReady(ctx context.Context, procs []*process) error {
	client := &http.Client{Timeout: 2 * time.Second}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for _, p := range procs {
		url := "http://" + p.health + "/readyz"
		err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			select {
			case <-p.exited:
				out, _ := os.ReadFile(p.log)
				return false, fmt.Errorf("exited (%v):\n%s", p.cmd.ProcessState, tail(string(out), 20))
			default:
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return false, err
			}
			resp, err := client.Do(req)
			if err != nil {
				return false, nil // not listening yet
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, nil
		})
		if err != nil {
			return fmt.Errorf("%s not ready at %s (log: %s): %w", p.name, url, p.log, err)
		}
		fmt.Printf("%s ready: %s, metrics http://%s/metrics, log %s\n", p.name, url, p.metrics, p.log)
	}
	return nil
}

// freeAddress returns 127.0.0.1 with a port nothing listens on now. Loopback, because every process
// of the local clusters shares this host, where a pod's ":8081" would clash and be reachable from
// outside.
func freeAddress() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
