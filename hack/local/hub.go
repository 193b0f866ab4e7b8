package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/internal/localcluster"
)

// hubUser is the identity ferry-hub runs as on the local hub.
const hubUser = "system:ferry:hub-controller"

// startHub runs the real ferry-hub binary against the local hub, with a credential limited to the
// shipped ClusterRole (--hub-role), so that a permission it lacks shows here first.
func (o *options) startHub(ctx context.Context, env *localcluster.Environment) (*agentProcess, error) {
	bin := filepath.Join(filepath.Dir(o.agentBinaryPath()), "ferry-hub")
	kubeconfig, err := filepath.Abs(o.path("hub-controller.kubeconfig"))
	if err != nil {
		return nil, err
	}
	if err := o.writeHubCredential(ctx, env, kubeconfig); err != nil {
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

// writeHubCredential gives ferry-hub a user bound to the --hub-role ClusterRole and writes its
// kubeconfig to path.
func (o *options) writeHubCredential(ctx context.Context, env *localcluster.Environment, path string) error {
	data, err := os.ReadFile(o.hubRole)
	if err != nil {
		return fmt.Errorf("--hub-role: %w", err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		return fmt.Errorf("--hub-role %s: %w", o.hubRole, err)
	}
	return env.WriteHubControllerKubeconfig(ctx, hubUser, role, path)
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
