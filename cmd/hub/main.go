// Command ferry-hub runs the Ferry hub controllers on the hub cluster.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	cmd := &cobra.Command{
		Use:           "ferry-hub",
		Short:         "Turn OAM ApplicationConfigurations into ManifestWorks for managed clusters",
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("the hub controller is not available in this build yet")
		},
	}
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "ferry-hub:", err)
		os.Exit(1)
	}
}
