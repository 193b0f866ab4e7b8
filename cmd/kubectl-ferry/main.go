// Command kubectl-ferry is the status view of Ferry for people, as a kubectl plugin (`kubectl ferry`):
// per cluster and per manifest, what the agents report of an ApplicationConfiguration or a
// ManifestWork, and the managed clusters themselves; as tables, or as JSON/YAML for scripts, once or
// followed as it changes. `kubectl ferry get works` and `kubectl ferry drift` are the fleet-wide views:
// every ManifestWork of every cluster in one table, and every object changed on its cluster and put
// back. `kubectl ferry rollout` steers the progressive rollout of an ApplicationConfiguration as
// `kubectl rollout` steers a Deployment's.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newCommand().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubectl-ferry:", err)
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	conn := newConnection()
	cmd := &cobra.Command{
		Use:   "kubectl-ferry",
		Short: "See what Ferry delivered where: per cluster, per manifest, applied, available, healthy",
		Long: "kubectl-ferry shows, from the hub, what the Ferry agents report: an ApplicationConfiguration on every cluster it\n" +
			"is delivered to, one ManifestWork, or the managed clusters; prints the ManifestWork a cluster gets of an\n" +
			"ApplicationConfiguration; steers its rollout, and shows what one of its revisions changes against another; lists\n" +
			"every ManifestWork of the fleet in one table, and every object changed on its cluster and put back.\n" +
			"Install it on your PATH and run it as `kubectl ferry`.",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Shown as kubectl shows its plugins.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl ferry"},
	}
	conn.addFlags(cmd.PersistentFlags())
	status := &cobra.Command{
		Use:   "status",
		Short: "Per cluster and per manifest: strategy, Applied, Available, health, why not, and status feedback",
		Args:  cobra.NoArgs,
	}
	status.AddCommand(newStatusAppConfigCommand(conn), newStatusWorkCommand(conn))
	cmd.AddCommand(status, newClustersCommand(conn), newRolloutCommand(conn), newRenderCommand(conn), newTargetsCommand(conn),
		newGetCommand(conn), newDriftCommand(conn), newDiffCommand(conn))
	return cmd
}
