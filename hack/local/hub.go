package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ferry-mc/ferry/internal/testing/deployrunner"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

// startHub installs deploy/hub on the hub, all but its Deployment, and runs the real ferry-hub binary
// as that Deployment's container: its args and env, as its ServiceAccount, so that it has exactly
// deploy/hub's RBAC and a permission it lacks shows here first.
func (o *options) startHub(ctx context.Context, env *localcluster.Environment) (*process, error) {
	kubeconfig, err := filepath.Abs(o.path("hub-controller.kubeconfig"))
	if err != nil {
		return nil, err
	}
	hub, err := deployrunner.InstallHub(ctx, o.deployDir, env.Hub.Name, env.Hub.Config, kubeconfig)
	if err != nil {
		return nil, err
	}
	cmd, health, metrics, err := hub.Command(o.binaryPath("ferry-hub"), env.Hub.Name)
	if err != nil {
		return nil, err
	}
	return startProcess(cmd, fmt.Sprintf("ferry-hub on %s as %s", env.Hub.Name, hub.User), o.path("hub-controller.log"), health, metrics)
}

// binaryPath is the binary of that name: for ferry-agent --agent-binary if given; otherwise the one
// beside ferry-agent, which is beside ferry-local unless --agent-binary says otherwise.
func (o *options) binaryPath(name string) string {
	agent := o.agentBinary
	if agent == "" {
		self, err := os.Executable()
		if err != nil {
			return name
		}
		agent = filepath.Join(filepath.Dir(self), "ferry-agent")
	}
	if name == "ferry-agent" {
		return agent
	}
	return filepath.Join(filepath.Dir(agent), name)
}
