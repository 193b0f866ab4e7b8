package main

import (
	"archive/tar"
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The numeric user and group the binaries run as. Numeric, so that Kubernetes' runAsNonRoot can verify
// it without reading the image's /etc/passwd; 65532 is the "nonroot" of distroless images, which
// people's PodSecurity settings and volume permissions often already expect.
const (
	nonrootID   = 65532
	nonrootUser = "65532:65532"
)

// The files besides the binary. /etc/passwd and /etc/group name the user, for programs that look
// names up by id; /tmp is where Go puts temporary files. Nothing else: no shell, no libc, no CA
// certificates (the binaries reach API servers with the CA of their kubeconfig). The Dockerfile copies
// the same two files.
var (
	//go:embed rootfs/etc/passwd
	etcPasswd []byte
	//go:embed rootfs/etc/group
	etcGroup []byte
)

// rootFilesystem is the image's only layer: the binary at /<name>, a link to it at each /<alias>, and
// the few files above, as a tar with sorted entries, every one owned by root, with a fixed mode and the
// time modTime.
func rootFilesystem(name string, aliases []string, binary []byte, modTime time.Time) ([]byte, error) {
	type entry struct {
		name string
		mode int64
		data []byte
		dir  bool
		link string // a symbolic link to this
	}
	entries := []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: etcGroup},
		{name: "etc/passwd", mode: 0o644, data: etcPasswd},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: name, mode: 0o755, data: binary},
	}
	for _, alias := range aliases {
		entries = append(entries, entry{name: alias, mode: 0o777, link: name})
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: modTime, Typeflag: tar.TypeReg, Size: int64(len(e.data)), Format: tar.FormatPAX}
		switch {
		case e.dir:
			h.Typeflag = tar.TypeDir
		case e.link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar header %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("tar %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("close tar: %w", err)
	}
	return buf.Bytes(), nil
}

// layerOf makes the tar a gzip-compressed OCI layer. The compression is computed once and kept: the
// digest, the tarball and the OCI layout all read it.
func layerOf(tarData []byte) (v1.Layer, error) {
	open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(tarData)), nil }
	layer, err := tarball.LayerFromOpener(open, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("compress layer: %w", err)
	}
	return layer, nil
}
