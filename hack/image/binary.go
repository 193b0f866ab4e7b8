package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/ferry-mc/ferry/internal/testing/gobuild"
)

// command is one binary Ferry ships, and so one image.
type command struct {
	// Name is the binary's name, its path in the image (/<Name>) and the image's name.
	Name string
	// Package is the main package, relative to the checkout.
	Package string
	// Description is the image's org.opencontainers.image.description.
	Description string
	// Aliases are more paths of the binary in the image, as links to it: /work for ferry-agent, the
	// path the klusterlet starts OCM's work agent at, so that the klusterlet can run Ferry's image.
	Aliases []string
}

// commands are the images `make images` builds.
var commands = []command{
	{Name: "ferry-hub", Package: "./cmd/hub", Description: "Ferry hub controller: OAM ApplicationConfigurations in, one ManifestWork per managed cluster out"},
	{Name: "ferry-agent", Package: "./cmd/agent", Description: "Ferry work agent: applies its managed cluster's ManifestWorks and reports their status to the hub",
		Aliases: []string{"work"}},
}

// buildBinary builds pkg of the checkout at root into out as a static Linux binary for arch, with the
// flags of every build of a Ferry command (gobuild.Flags): static, so it runs on an empty base image (no
// libc, no loader); without the build machine's paths or the checkout's git state, so the same source
// gives the same bytes wherever it is built (the revision is in the image's labels instead); stripped.
// The commands carry no version variable to stamp with -X.
func buildBinary(ctx context.Context, root, pkg, arch, out string) error {
	cmd := gobuild.Command(ctx, root, out, pkg, "GOOS=linux", "GOARCH="+arch)
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s (GOARCH=%s): %w\n%s", pkg, arch, err, strings.TrimSpace(string(output)))
	}
	return nil
}
