package main

import (
	"context"
	"fmt"
	"time"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/internal/testing/podinstall"
)

// localClusterName is the name the hub is registered under with itself with --real-node, as OCM calls a
// hub that manages itself.
const localClusterName = "local-cluster"

// installOnNode installs Ferry on the hub, which has a real node, as a user installs it: the images of
// --images imported into the node, `kubectl apply -k deploy/hub`, the hub registered with itself as
// local-cluster by `ferry-hub clusters add`, `kubectl apply -k deploy/agent/spoke`. ferry-hub and the
// hub's own ferry-agent then run as pods; they stop with the cluster.
func (o *options) installOnNode(ctx context.Context, env *localcluster.Environment) error {
	in := &podinstall.Installer{
		DeployDir: o.deployDir,
		Cluster:   env.Hub,
		HubCLI:    o.binaryPath("ferry-hub"),
		Log:       func(format string, args ...any) { fmt.Printf(format+"\n", args...) },
	}
	took, err := in.ImportImages(ctx, o.imagesDir)
	if err != nil {
		return fmt.Errorf("import the images of %s (make images builds them): %w", o.imagesDir, err)
	}
	for image, d := range took {
		fmt.Printf("image %s imported into node %s in %s\n", image, env.Hub.RealNode.Name, d.Round(time.Millisecond))
	}
	start := time.Now()
	if _, err := in.InstallHub(ctx); err != nil {
		return err
	}
	fmt.Printf("ferry-hub pod Ready %s after kubectl apply -k deploy/hub\n", time.Since(start).Round(time.Millisecond))
	if err := in.Register(ctx, localClusterName, "--lease-duration-seconds="+localLeaseDurationSeconds); err != nil {
		return err
	}
	start = time.Now()
	if err := in.InstallAgent(ctx); err != nil {
		return err
	}
	if _, err := in.WaitDeploymentReady(ctx, podinstall.AgentNamespace, "ferry-agent"); err != nil {
		return err
	}
	fmt.Printf("ferry-agent pod of %s Ready %s after kubectl apply -k deploy/agent/spoke\n", localClusterName, time.Since(start).Round(time.Millisecond))
	return nil
}
