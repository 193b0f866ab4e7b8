package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/internal/localcluster"
)

// agentProcess is a ferry-agent binary running for one spoke.
type agentProcess struct {
	cluster string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// startAgents joins every spoke to the hub as `clusteradm join` would (a hub-kubeconfig directory with
// a credential limited to the spoke's namespace by the agent's shipped ClusterRole) and runs the real
// ferry-agent binary for it.
func (o *options) startAgents(ctx context.Context, env *localcluster.Environment) ([]*agentProcess, error) {
	data, err := os.ReadFile(o.agentRole)
	if err != nil {
		return nil, fmt.Errorf("--agent-role: %w", err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		return nil, fmt.Errorf("--agent-role %s: %w", o.agentRole, err)
	}
	bin := o.agentBinaryPath()
	var agents []*agentProcess
	for _, spoke := range env.Spokes {
		dir, err := filepath.Abs(o.path(filepath.Join(spoke.Name, "hub-kubeconfig")))
		if err != nil {
			return agents, err
		}
		if err := env.WriteHubKubeconfigDir(ctx, spoke.Name, role, dir); err != nil {
			return agents, fmt.Errorf("join %s: %w", spoke.Name, err)
		}
		spokeKubeconfig, err := filepath.Abs(o.path(spoke.Name + ".kubeconfig"))
		if err != nil {
			return agents, err
		}
		log, err := os.Create(o.path("agent-" + spoke.Name + ".log"))
		if err != nil {
			return agents, err
		}
		cmd := exec.Command(bin,
			"--hub-kubeconfig-dir="+dir,
			"--spoke-kubeconfig="+spokeKubeconfig,
			"--metrics-bind-address=0",
			"--health-probe-bind-address=0",
			// Leader election on, as shipped; the Lease goes to a namespace every spoke has (the
			// agent is admin of its local spoke).
			"--leader-election-namespace=kube-system",
		)
		cmd.Stdout, cmd.Stderr = log, log
		// Ends with this process, however it ends.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		err = cmd.Start()
		log.Close()
		if err != nil {
			return agents, fmt.Errorf("start %s for %s: %w", bin, spoke.Name, err)
		}
		a := &agentProcess{cluster: spoke.Name, cmd: cmd, exited: make(chan struct{})}
		go func() { _ = cmd.Wait(); close(a.exited) }()
		agents = append(agents, a)
	}
	return agents, nil
}

// stopAgents stops the agents, giving each a few seconds to finish what it is doing.
func stopAgents(agents []*agentProcess) error {
	var errs []error
	for _, a := range agents {
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, a := range agents {
		select {
		case <-a.exited:
		case <-time.After(10 * time.Second):
			_ = a.cmd.Process.Kill()
			<-a.exited
			errs = append(errs, fmt.Errorf("agent of %s did not stop within 10s; killed it", a.cluster))
		}
	}
	return errors.Join(errs...)
}
