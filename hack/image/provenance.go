package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// unknown stands for the revision and version of a checkout that is not a git repository.
const unknown = "unknown"

// provenance says which source an image was built from and when; it is the only input of an image
// besides the source itself, so that two builds of one checkout are byte for byte the same.
type provenance struct {
	// Revision is the commit of the checkout (`git rev-parse HEAD`), or "unknown".
	Revision string
	// Version is `git describe --tags --always --dirty`, or "unknown"; it is the image tag.
	Version string
	// Created is the time every file and the image itself carry: $SOURCE_DATE_EPOCH when set, else the
	// commit time, else the Unix epoch — never the time of the build.
	Created time.Time
}

// resolveProvenance reads the provenance of the checkout at root.
func resolveProvenance(ctx context.Context, root string) (provenance, error) {
	p := provenance{Revision: unknown, Version: unknown, Created: time.Unix(0, 0).UTC()}
	if rev, err := git(ctx, root, "rev-parse", "HEAD"); err == nil {
		p.Revision, p.Version = rev, rev
		if v, err := git(ctx, root, "describe", "--tags", "--always", "--dirty"); err == nil {
			p.Version = v
		}
		if ct, err := git(ctx, root, "log", "-1", "--format=%ct", "HEAD"); err == nil {
			if sec, err := strconv.ParseInt(ct, 10, 64); err == nil {
				p.Created = time.Unix(sec, 0).UTC()
			}
		}
	}
	if epoch, ok := os.LookupEnv("SOURCE_DATE_EPOCH"); ok && epoch != "" {
		sec, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			return p, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since the Unix epoch: %w", epoch, err)
		}
		p.Created = time.Unix(sec, 0).UTC()
	}
	p.Version = tagSafe(p.Version)
	return p, nil
}

// git runs git in dir and returns its trimmed output.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

var notInTag = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// tagSafe makes v a valid image tag: at most 128 of [A-Za-z0-9_.-], not starting with '.' or '-'.
// `git describe` output already is one unless a tag name holds other characters.
func tagSafe(v string) string {
	v = notInTag.ReplaceAllString(v, "-")
	v = strings.TrimLeft(v, ".-")
	if v == "" {
		return unknown
	}
	return v[:min(len(v), 128)]
}
