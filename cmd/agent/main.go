// Command ferry-agent is the Ferry work agent that runs on each managed (spoke) cluster.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ferry-mc/ferry/pkg/agent/process"
	"github.com/ferry-mc/ferry/pkg/relist"
)

func main() {
	relist.ListThenWatch()
	setGCPercent(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command with args and returns the process exit code. Errors are printed to stderr
// as one line "ferry-agent: <error>".
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newCommand()
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(stderr, "ferry-agent:", strings.Join(strings.Fields(err.Error()), " "))
		return 1
	}
	return 0
}

func newCommand() *cobra.Command {
	o := process.NewOptions()
	cmd := &cobra.Command{
		Use:   "ferry-agent",
		Short: "Apply the ManifestWorks of one managed cluster and report their status to the hub",
		Long: "ferry-agent watches the ManifestWorks in its cluster's namespace on the hub, applies their " +
			"manifests to the managed cluster and reports their status back. It takes the flags of the Open " +
			"Cluster Management work agent and the hub kubeconfig directory `clusteradm join` sets up.",
		// The klusterlet starts OCM's work agent as `/work agent --spoke-cluster-name=...`: the same
		// command line starts ferry-agent, with OCM's serving defaults (see Options.OCMCommandLine).
		Args:          klusterletArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.OCMCommandLine = len(args) > 0
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			if err := installLogger(cmd.Context(), o, cmd.ErrOrStderr()); err != nil {
				return err
			}
			return process.Run(cmd.Context(), o)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// klusterletArgs accepts no argument but OCM's work agent command line: `agent`, or `/work agent`. The
// klusterlet's work-agent Deployment gives `/work agent …` as its container's args, with no command:
// OCM's image has no entrypoint and runs them as they are, while the kubelet appends them to the
// entrypoint of Ferry's image, so that ferry-agent sees `/work` as its first argument.
func klusterletArgs(_ *cobra.Command, args []string) error {
	if len(args) == 0 || slices.Equal(args, []string{"agent"}) || slices.Equal(args, []string{"/work", "agent"}) {
		return nil
	}
	return fmt.Errorf("unexpected argument %q: ferry-agent takes flags only (and the positional agent of OCM's work agent command line)", strings.Join(args, " "))
}
