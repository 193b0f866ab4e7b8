package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ferry-mc/ferry/internal/localcluster"
	"github.com/ferry-mc/ferry/internal/shipped"
	"github.com/ferry-mc/ferry/manifests"
)

// startHub installs deploy/hub on the hub, all but its Deployment, and runs the real ferry-hub binary
// as that Deployment's container: its args and env, as its ServiceAccount, so that it has exactly
// deploy/hub's RBAC and a permission it lacks shows here first.
func (o *options) startHub(ctx context.Context, env *localcluster.Environment) (*process, error) {
	in, err := shipped.Render(ctx, filepath.Join(o.deployDir, "hub"))
	if err != nil {
		return nil, err
	}
	// internal/localcluster installs the hub's CRDs from manifests/ when it starts the hub.
	crds, err := manifests.HubCRDs()
	if err != nil {
		return nil, err
	}
	if err := in.ApplyTo(ctx, env.Hub.Name, env.Hub.Config, crds); err != nil {
		return nil, err
	}
	kubeconfig, err := filepath.Abs(o.path("hub-controller.kubeconfig"))
	if err != nil {
		return nil, err
	}
	user, err := shipped.ServiceAccountKubeconfig(ctx, env.Hub.Name, env.Hub.Config, in.Deployment, kubeconfig)
	if err != nil {
		return nil, err
	}
	binds, health, metrics, err := shipped.LoopbackServers()
	if err != nil {
		return nil, err
	}
	d := in.Deployment
	cmd, err := in.Command(shipped.Process{
		Binary: o.binaryPath("ferry-hub"),
		Fields: shipped.PodFields(d.Namespace, d.Name+"-"+env.Hub.Name),
		// In a pod, ferry-hub finds its ServiceAccount's in-cluster configuration instead.
		Overrides: append(binds, shipped.Add("kubeconfig", kubeconfig)),
	})
	if err != nil {
		return nil, err
	}
	return startProcess(cmd, fmt.Sprintf("ferry-hub on %s as %s", env.Hub.Name, user), o.path("hub-controller.log"), health, metrics)
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
