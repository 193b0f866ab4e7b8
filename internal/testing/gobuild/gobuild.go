package gobuild

import (
	"context"
	"os"
	"os/exec"
)

// Flags are the flags of every build of a Ferry command. -trimpath and -buildvcs=false keep the build
// machine's paths and the checkout's git state out of the binary: the same source gives the same bytes
// wherever it is built. -s -w drop the symbol table and DWARF, about a third of the size; panics still
// print stack traces.
var Flags = []string{"-trimpath", "-buildvcs=false", "-ldflags=-s -w"}

// Command is `go build` of pkg into out, run in dir (the checkout's root, or "" for the current
// directory), with Flags, CGO_ENABLED=0 and env added to the environment (GOOS, GOARCH).
func Command(ctx context.Context, dir, out, pkg string, env ...string) *exec.Cmd {
	args := append([]string{"build"}, Flags...)
	cmd := exec.CommandContext(ctx, "go", append(args, "-o", out, pkg)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0"), env...)
	return cmd
}
