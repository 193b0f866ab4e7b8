package node

import (
	"fmt"
	"os"
	"testing"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

const (
	// requireEnv, set to 1, makes a machine that cannot run a real node fail the package (CI sets it:
	// there the tests must run).
	requireEnv = "FERRY_REQUIRE_REAL_NODE"
	// notRunFileEnv names a file the package writes its reason to when it runs no test, for `make
	// test` to print at its end: go test shows nothing of a package that passes.
	notRunFileEnv = "FERRY_REAL_NODE_NOT_RUN_FILE"
)

func TestMain(m *testing.M) {
	if reason := localcluster.RealNodeUnavailable(); reason != "" {
		line := "real-node tests NOT run: " + reason
		if os.Getenv(requireEnv) == "1" {
			fmt.Fprintf(os.Stderr, "%s (%s=1 requires them)\n", line, requireEnv)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, line)
		if f := os.Getenv(notRunFileEnv); f != "" {
			if err := os.WriteFile(f, []byte(line+"\n"), 0o644); err != nil {
				fmt.Fprintf(os.Stderr, "write %s: %v\n", f, err)
				os.Exit(1)
			}
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
