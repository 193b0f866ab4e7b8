package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The Dockerfile cannot be built here (no Docker); it is kept equivalent to what `make images` builds by
// saying the same things: the same build flags, the same files, user, entrypoints and labels.
func TestDockerfileSaysWhatMakeImagesBuilds(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(checkoutRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	dockerfile := string(data)
	want := []string{
		"FROM golang:1.25 AS build",
		`CGO_ENABLED=0 GOOS=linux go build -trimpath -buildvcs=false -ldflags="-s -w"`,
		"install -m 0644 hack/image/rootfs/etc/passwd hack/image/rootfs/etc/group /rootfs/etc/",
		"chmod 1777 /rootfs/tmp",
		"FROM scratch",
		"USER " + nonrootUser,
		"WORKDIR /",
		labelSource + `="` + sourceURL + `"`,
		labelRevision + `="${REVISION}"`,
		labelVersion + `="${VERSION}"`,
		labelCreated + `="${CREATED}"`,
	}
	for _, c := range commands {
		want = append(want,
			"FROM scratch AS "+c.Name,
			`ENTRYPOINT ["/`+c.Name+`"]`,
			labelTitle+`="`+c.Name+`"`,
			labelDescription+`="`+c.Description+`"`,
		)
	}
	for _, w := range want {
		if !strings.Contains(dockerfile, w) {
			t.Errorf("Dockerfile does not say %s", w)
		}
	}
}
