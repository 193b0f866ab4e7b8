package deployrunner

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"

	"k8s.io/client-go/rest"

	"github.com/ferry-mc/ferry/manifests"
)

// Hub is deploy/hub installed on a hub, for ferry-hub processes on this machine (ferry-local, the
// end-to-end tests, the fleet benchmark) that run as its Deployment's container would.
type Hub struct {
	Install *Install
	// Kubeconfig is the kubeconfig of the Deployment's ServiceAccount, User the name the hub knows it by.
	Kubeconfig, User string
}

// InstallHub renders deployDir/hub, applies all of it but the Deployment to the hub cfg reaches (named
// cluster in errors), and writes the Deployment's ServiceAccount's kubeconfig to kubeconfig. The hub
// must already serve the CRDs of manifests/ (internal/testing/localcluster installs them when it starts a hub);
// deploy/hub's copies must be identical.
func InstallHub(ctx context.Context, deployDir, cluster string, cfg *rest.Config, kubeconfig string) (*Hub, error) {
	in, err := Render(ctx, filepath.Join(deployDir, "hub"))
	if err != nil {
		return nil, err
	}
	crds, err := manifests.HubCRDs()
	if err != nil {
		return nil, err
	}
	if err := in.ApplyTo(ctx, cluster, cfg, crds); err != nil {
		return nil, err
	}
	user, err := ServiceAccountKubeconfig(ctx, cluster, cfg, in.Deployment, kubeconfig)
	if err != nil {
		return nil, err
	}
	return &Hub{Install: in, Kubeconfig: kubeconfig, User: user}, nil
}

// Command returns the command that runs binary as the Deployment's container in the pod
// <deployment>-<podSuffix>, with what a process here needs instead of a pod's: its health and
// metrics servers on free loopback ports (returned as host:port) and the ServiceAccount's kubeconfig
// for the in-cluster configuration; overrides come on top.
func (h *Hub) Command(binary, podSuffix string, overrides ...Override) (cmd *exec.Cmd, health, metrics string, err error) {
	binds, health, metrics, err := LoopbackServers()
	if err != nil {
		return nil, "", "", err
	}
	d := h.Install.Deployment
	cmd, err = h.Install.Command(Process{
		Binary:    binary,
		Fields:    PodFields(d.Namespace, d.Name+"-"+podSuffix),
		Overrides: append(append(binds, Add("kubeconfig", h.Kubeconfig)), overrides...),
	})
	if err != nil {
		return nil, "", "", fmt.Errorf("ferry-hub as %s: %w", h.User, err)
	}
	return cmd, health, metrics, nil
}
