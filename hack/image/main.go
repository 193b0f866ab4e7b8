package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ferry-image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ferry-image", flag.ContinueOnError)
	root := fs.String("root", ".", "The Ferry checkout to build.")
	out := fs.String("out", "bin/images", "Directory for <image>.tar (docker archives) and oci/ (an OCI image layout of all images).")
	arch := fs.String("arch", runtime.GOARCH, "GOARCH of the binaries and images.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	rootDir, err := filepath.Abs(*root)
	if err != nil {
		return err
	}
	p, err := resolveProvenance(ctx, rootDir)
	if err != nil {
		return err
	}
	start := time.Now()
	built, err := buildImages(ctx, buildOptions{Root: rootDir, OutDir: *out, Arch: *arch, Provenance: p})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "built in %s from revision %s, created %s\n", time.Since(start).Round(100*time.Millisecond), p.Revision, p.Created.Format(time.RFC3339))
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tSIZE\tDIGEST\tIMAGE ID\tTARBALL")
	for _, b := range built {
		fmt.Fprintf(tw, "%s\t%.1f MiB\t%s\t%s\t%s\n", tagList(b.Tags), float64(b.Size)/(1<<20), b.Digest, b.ConfigDigest.Hex[:12], b.Tarball)
	}
	fmt.Fprintf(tw, "(all)\t\t\t\t%s\n", filepath.Join(*out, "oci"))
	return tw.Flush()
}

// tagList is the image's first tag in full and the others by their tag only: ferry.io/ferry-hub:v1, :dev.
func tagList(tags []name.Tag) string {
	list := make([]string, 0, len(tags))
	for i, t := range tags {
		if i == 0 {
			list = append(list, t.String())
		} else {
			list = append(list, ":"+t.TagStr())
		}
	}
	return strings.Join(list, ", ")
}
