package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"

	"github.com/ferry-mc/ferry/internal/testing/deployrunner"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/manifests"
)

// startAgents installs deploy/agent/spoke on every spoke, all but its Deployment, and runs the real
// ferry-agent binary for it as that Deployment's container: its args and env, as its ServiceAccount
// on the spoke, and with a hub credential laid out as the Secret hub-kubeconfig-secret it mounts.
func (o *options) startAgents(ctx context.Context, env *localcluster.Environment) ([]*process, error) {
	in, err := deployrunner.Render(ctx, filepath.Join(o.deployDir, "agent", "spoke"))
	if err != nil {
		return nil, err
	}
	// internal/testing/localcluster installs the spoke's CRDs from manifests/ when it starts a spoke.
	crds, err := manifests.SpokeCRDs()
	if err != nil {
		return nil, err
	}
	d := in.Deployment
	var agents []*process
	for _, spoke := range env.Spokes {
		if err := in.ApplyTo(ctx, spoke.Name, spoke.Config, crds); err != nil {
			return agents, err
		}
		hubKubeconfigDir, err := filepath.Abs(o.path(filepath.Join(spoke.Name, "hub-kubeconfig")))
		if err != nil {
			return agents, err
		}
		if err := o.writeAgentHubCredential(ctx, env, spoke.Name, hubKubeconfigDir); err != nil {
			return agents, err
		}
		spokeKubeconfig, err := filepath.Abs(o.path(filepath.Join(spoke.Name, "spoke.kubeconfig")))
		if err != nil {
			return agents, err
		}
		user, err := deployrunner.ServiceAccountKubeconfig(ctx, spoke.Name, spoke.Config, d, spokeKubeconfig)
		if err != nil {
			return agents, err
		}
		binds, health, metrics, err := deployrunner.LoopbackServers()
		if err != nil {
			return agents, err
		}
		cmd, err := in.Command(deployrunner.Process{
			Binary: o.binaryPath("ferry-agent"),
			Fields: deployrunner.PodFields(d.Namespace, d.Name+"-"+spoke.Name),
			Overrides: append(binds,
				// The Secret's mount path in the pod.
				deployrunner.Set("hub-kubeconfig-dir", hubKubeconfigDir),
				// In a pod, the agent finds its ServiceAccount's in-cluster configuration instead.
				deployrunner.Add("spoke-kubeconfig", spokeKubeconfig),
			),
		})
		if err != nil {
			return agents, err
		}
		a, err := startProcess(cmd, fmt.Sprintf("ferry-agent on %s as %s", spoke.Name, user), o.path("agent-"+spoke.Name+".log"), health, metrics)
		if err != nil {
			return agents, err
		}
		agents = append(agents, a)
	}
	return agents, nil
}

// localLeaseDurationSeconds is how often the local agents renew their Lease on the hub: short, so that
// a stopped agent shows as AVAILABLE Unknown within ten seconds rather than five minutes.
const localLeaseDurationSeconds = "2"

// writeAgentHubCredential registers spoke with the hub as a user does on a cluster without OCM, with
// the real `ferry-hub clusters add` (the ManagedCluster, its namespace, a ServiceAccount token bound to
// the agent's shipped hub role there, the Lease the agent renews), and has it write the agent's
// hub-kubeconfig-secret into dir, where the Deployment mounts it.
func (o *options) writeAgentHubCredential(ctx context.Context, env *localcluster.Environment, spoke, dir string) error {
	cmd := exec.CommandContext(ctx, o.binaryPath("ferry-hub"), "clusters", "add", spoke,
		"--kubeconfig="+env.Hub.Kubeconfig, "--output-dir="+dir, "--lease-duration-seconds="+localLeaseDurationSeconds)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("ferry-hub clusters add %s: %w\n%s", spoke, err, out)
	}
	fmt.Print(string(out))
	return nil
}
