package deploy

// pkg/agent/process imports this package (for the agent's hub ClusterRole, through pkg/registration),
// so the tests of this package cannot import it. agentargs_test.go, in package deploy_test, can: it
// gives them ferry-agent's own handling of its arguments with SetCompleteAgentArgs.

// AgentOptions is what the tests look at of ferry-agent's options once they are completed.
type AgentOptions struct {
	WorkloadSourceDriver string
	WorkloadSourceConfig string
	SpokeClusterName     string
	CloudEventsClientID  string
	HubKubeconfig        string
	HubKubeconfigDir     string
}

// completeAgentArgs parses args with ferry-agent's flags, then completes and validates the options as
// cmd/agent does before it runs; see completeAgentInPod.
var completeAgentArgs func(args []string) (AgentOptions, error)

// SetCompleteAgentArgs sets completeAgentArgs.
func SetCompleteAgentArgs(f func(args []string) (AgentOptions, error)) { completeAgentArgs = f }
