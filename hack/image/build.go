package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// buildOptions says what to build and where to put it.
type buildOptions struct {
	// Root is the checkout to build.
	Root string
	// OutDir receives <image>.tar for every image and the OCI layout oci/ holding all of them.
	OutDir string
	// Arch is the GOARCH of the binaries and the images.
	Arch string
	// Provenance is stamped on every image (see resolveProvenance).
	Provenance provenance
}

// builtImage is one image buildImages wrote.
type builtImage struct {
	Command command
	Image   v1.Image
	// Tag names the image in its tarball and in the OCI layout.
	Tag name.Tag
	// Tarball is the docker-archive file.
	Tarball string
	// Digest is the manifest digest (what a registry would call the image); ConfigDigest is what
	// `docker images` shows as IMAGE ID after `docker load`.
	Digest, ConfigDigest v1.Hash
	// Size is the compressed size: manifest, config and layer, what a registry stores and a node pulls.
	Size int64
}

// Annotations of an image in the OCI layout: the tag, and the full name containerd imports it as.
const (
	annotationRefName       = "org.opencontainers.image.ref.name"
	annotationContainerdRef = "io.containerd.image.name"
)

// buildImages builds every command's binary and image, and writes them to o.OutDir: <name>.tar as a
// docker archive tagged ferry.io/<name>:<version>, and all images into the OCI layout oci/ (which is
// written anew, so that it holds exactly this build).
func buildImages(ctx context.Context, o buildOptions) ([]builtImage, error) {
	binDir := filepath.Join(o.OutDir, "binaries")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return nil, err
	}
	var built []builtImage
	for _, c := range commands {
		b, err := buildOne(ctx, o, c, filepath.Join(binDir, c.Name))
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", c.Name, err)
		}
		built = append(built, b)
	}
	if err := writeLayout(filepath.Join(o.OutDir, "oci"), built); err != nil {
		return nil, fmt.Errorf("OCI layout: %w", err)
	}
	return built, nil
}

func buildOne(ctx context.Context, o buildOptions, c command, binaryPath string) (builtImage, error) {
	b := builtImage{Command: c, Tarball: filepath.Join(o.OutDir, c.Name+".tar")}
	if err := buildBinary(ctx, o.Root, c.Package, o.Arch, binaryPath); err != nil {
		return b, err
	}
	binary, err := os.ReadFile(binaryPath)
	if err != nil {
		return b, err
	}
	if b.Image, err = newImage(c, binary, o.Arch, o.Provenance); err != nil {
		return b, err
	}
	if b.Tag, err = name.NewTag(registry + "/" + c.Name + ":" + o.Provenance.Version); err != nil {
		return b, fmt.Errorf("tag: %w", err)
	}
	if b.Digest, err = b.Image.Digest(); err != nil {
		return b, err
	}
	if b.ConfigDigest, err = b.Image.ConfigName(); err != nil {
		return b, err
	}
	if b.Size, err = compressedSize(b.Image); err != nil {
		return b, err
	}
	// Written beside and renamed, so that an interrupted build never leaves a truncated tarball that
	// `docker load` would half read.
	partial := b.Tarball + ".partial"
	if err := tarball.WriteToFile(partial, b.Tag, b.Image); err != nil {
		return b, errors.Join(fmt.Errorf("write %s: %w", b.Tarball, err), os.Remove(partial))
	}
	return b, os.Rename(partial, b.Tarball)
}

// writeLayout writes the images into a new OCI image layout at dir.
func writeLayout(dir string, images []builtImage) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	path, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	for _, b := range images {
		annotations := map[string]string{annotationRefName: b.Tag.TagStr(), annotationContainerdRef: b.Tag.Name()}
		if err := path.AppendImage(b.Image, layout.WithAnnotations(annotations)); err != nil {
			return fmt.Errorf("add %s: %w", b.Tag, err)
		}
	}
	return nil
}

// compressedSize is the size of the manifest, the config and the layers as stored.
func compressedSize(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	raw, err := img.RawManifest()
	if err != nil {
		return 0, err
	}
	size := int64(len(raw)) + m.Config.Size
	for _, l := range m.Layers {
		size += l.Size
	}
	return size, nil
}
