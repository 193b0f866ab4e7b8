// Command ferry-agent is the Ferry work agent that runs on each managed (spoke) cluster.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	cmd := &cobra.Command{
		Use:           "ferry-agent",
		Short:         "Apply the ManifestWorks of one managed cluster and report their status to the hub",
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("the work agent is not available in this build yet")
		},
	}
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "ferry-agent:", err)
		os.Exit(1)
	}
}
