package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
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
	// Tags name the image in its tarball and in the OCI layout: its version tag first, then the tag
	// deploy/ runs (see imageTags).
	Tags []name.Tag
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
// docker archive tagged ferry.io/<name>:<version> and ferry.io/<name>:dev, and all images under both
// names into the OCI layout oci/ (which is written anew, so that it holds exactly this build).
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
	if b.Tags, err = imageTags(c, o.Provenance.Version); err != nil {
		return b, err
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
	return b, writeDockerArchive(b.Tarball, b.Image, b.Tags, o.Provenance.Created)
}

// writeLayout writes the images into a new OCI image layout at dir, one index.json entry per tag.
//
// An index entry names one manifest by one tag, so an image with two tags is two entries with one
// digest (its blobs are stored once). That is how the layout gives a manifest several names, and the
// very index containerd's importer (`ctr images import`, `kind load image-archive`) makes of a docker
// archive's RepoTags: one entry per tag, io.containerd.image.name and ref.name as here. So both
// outputs load as the same names.
func writeLayout(dir string, images []builtImage) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	path, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	for _, b := range images {
		for _, tag := range b.Tags {
			annotations := map[string]string{annotationRefName: tag.TagStr(), annotationContainerdRef: tag.Name()}
			if err := path.AppendImage(b.Image, layout.WithAnnotations(annotations)); err != nil {
				return fmt.Errorf("add %s: %w", tag, err)
			}
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
