package deploy_test

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/ferry-mc/ferry/deploy"
	"github.com/ferry-mc/ferry/pkg/agent/process"
)

func init() { deploy.SetCompleteAgentArgs(completeAgentArgs) }

// completeAgentArgs does with args what cmd/agent does before it runs the agent: parse them with the
// agent's flags, Complete and Validate.
func completeAgentArgs(args []string) (deploy.AgentOptions, error) {
	o := process.NewOptions()
	fs := pflag.NewFlagSet("ferry-agent", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return deploy.AgentOptions{}, err
	}
	if fs.NArg() > 0 {
		return deploy.AgentOptions{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := o.Complete(); err != nil {
		return deploy.AgentOptions{}, err
	}
	if err := o.Validate(); err != nil {
		return deploy.AgentOptions{}, err
	}
	return deploy.AgentOptions{
		WorkloadSourceDriver: o.WorkloadSourceDriver,
		WorkloadSourceConfig: o.WorkloadSourceConfig,
		SpokeClusterName:     o.SpokeClusterName,
		CloudEventsClientID:  o.CloudEventsClientID,
		HubKubeconfig:        o.HubKubeconfig,
		HubKubeconfigDir:     o.HubKubeconfigDir,
	}, nil
}
