package localcluster

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestWriteImageArchive(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "hello")
	if err := os.WriteFile(binary, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "hello.tar")
	if err := WriteImageArchive(archive, "ferry.io/hello:test", binary); err != nil {
		t.Fatal(err)
	}
	cfg, files := readImageArchive(t, archive, "ferry.io/hello:test")
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/hello"}) || cfg.OS != "linux" {
		t.Errorf("entrypoint %q on %q, want [/hello] on linux", cfg.Config.Entrypoint, cfg.OS)
	}
	if len(files) != 1 || files[0].Name != "hello" || files[0].Mode != 0o755 || files[0].data != "#!/bin/true\n" {
		t.Errorf("layer holds %+v, want only the binary as hello, mode 755", files)
	}
}

// OCM's klusterlet runs its images with runAsNonRoot and the binary's path as args: an image of OCM's
// must have a numeric user and no entrypoint, and may hold several binaries.
func TestWriteImageWithoutEntrypoint(t *testing.T) {
	dir := t.TempDir()
	var binaries []string
	for _, b := range []string{"registration", "registration-operator"} {
		binaries = append(binaries, filepath.Join(dir, b))
		if err := os.WriteFile(binaries[len(binaries)-1], []byte(b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	archive := filepath.Join(dir, "ocm.tar")
	if err := WriteImage(archive, ImageSpec{Tag: "ferry.io/ocm/registration:v1.2.0", Binaries: binaries, User: "10001"}); err != nil {
		t.Fatal(err)
	}
	cfg, files := readImageArchive(t, archive, "ferry.io/ocm/registration:v1.2.0")
	if len(cfg.Config.Entrypoint) != 0 || cfg.Config.User != "10001" {
		t.Errorf("entrypoint %q, user %q; want none and 10001", cfg.Config.Entrypoint, cfg.Config.User)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, []string{"registration", "registration-operator"}) {
		t.Errorf("layer holds %q, want both binaries at the root", names)
	}
}

type layerFile struct {
	*tar.Header
	data string
}

// readImageArchive reads an archive back as `ctr images import` and `docker load` do, by the tag in
// manifest.json, and returns its configuration and the files of its one layer.
func readImageArchive(t *testing.T, archive, tagName string) (*v1.ConfigFile, []layerFile) {
	t.Helper()
	tag, err := name.NewTag(tagName)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(archive, &tag)
	if err != nil {
		t.Fatalf("read the archive by its tag: %v", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v; want one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var files []layerFile
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return cfg, files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, layerFile{Header: h, data: string(data)})
	}
}
