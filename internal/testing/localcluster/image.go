package localcluster

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// WriteImageArchive packs a static binary as a one-layer image, the binary at /<its base name> and its
// entrypoint, named tag, and writes it to path as a docker archive (`docker save`'s format), which
// Cluster.ImportImage loads into a real node. It is for small test programs and the sandbox's pause
// program; Ferry's own images come from `make images` (hack/image), which also fixes every input for
// reproducible digests.
func WriteImageArchive(path, tag, binary string) error {
	return WriteImage(path, ImageSpec{Tag: tag, Binaries: []string{binary}, Entrypoint: []string{"/" + filepath.Base(binary)}})
}

// ImageSpec is an image of static binaries, each at /<its base name>, in one layer.
type ImageSpec struct {
	Tag      string
	Binaries []string
	// Entrypoint is the image's entrypoint; none when empty, as in OCM's images, whose Deployments name
	// the binary in their args (`/registration agent …`).
	Entrypoint []string
	// User is the image's user; a numeric one lets a pod that sets runAsNonRoot without runAsUser
	// start (the kubelet cannot check a name). Empty is root.
	User string
}

// WriteImage packs spec's binaries as a one-layer image named spec.Tag and writes it to path as a
// docker archive, which Cluster.ImportImage loads into a real node.
func WriteImage(path string, spec ImageSpec) error {
	ref, err := name.NewTag(spec.Tag)
	if err != nil {
		return fmt.Errorf("image tag %q: %w", spec.Tag, err)
	}
	var layerTar bytes.Buffer
	tw := tar.NewWriter(&layerTar)
	for _, binary := range spec.Binaries {
		data, err := os.ReadFile(binary)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: filepath.Base(binary), Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar.Bytes())), nil
	})
	if err != nil {
		return fmt.Errorf("layer of %s: %w", spec.Tag, err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Config = v1.Config{Entrypoint: spec.Entrypoint, User: spec.User, WorkingDir: "/"}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	if err := tarball.WriteToFile(path, ref, img); err != nil {
		return fmt.Errorf("write image archive %s: %w", path, err)
	}
	return nil
}
