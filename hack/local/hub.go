package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// startHub runs the real ferry-hub binary against the local hub, with the hub's admin kubeconfig.
func (o *options) startHub() (*agentProcess, error) {
	bin := filepath.Join(filepath.Dir(o.agentBinaryPath()), "ferry-hub")
	kubeconfig, err := filepath.Abs(o.path("hub.kubeconfig"))
	if err != nil {
		return nil, err
	}
	log, err := os.Create(o.path("hub-controller.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(bin, "--kubeconfig="+kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &agentProcess{cluster: "hub", cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// agentBinaryPath is the ferry-agent binary: --agent-binary, else the one beside ferry-local.
func (o *options) agentBinaryPath() string {
	if o.agentBinary != "" {
		return o.agentBinary
	}
	self, err := os.Executable()
	if err != nil {
		return "ferry-agent"
	}
	return filepath.Join(filepath.Dir(self), "ferry-agent")
}
