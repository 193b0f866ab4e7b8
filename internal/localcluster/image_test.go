package localcluster

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
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
	tag, err := name.NewTag("ferry.io/hello:test")
	if err != nil {
		t.Fatal(err)
	}
	// Read back as `ctr images import` and `docker load` do: by the tag in manifest.json.
	img, err := tarball.ImageFromPath(archive, &tag)
	if err != nil {
		t.Fatalf("read the archive by its tag: %v", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/hello"}) || cfg.OS != "linux" {
		t.Errorf("entrypoint %q on %q, want [/hello] on linux", cfg.Config.Entrypoint, cfg.OS)
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
	tr := tar.NewReader(rc)
	h, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	if h.Name != "hello" || h.Mode != 0o755 || string(data) != "#!/bin/true\n" {
		t.Errorf("layer holds %s (mode %o, %q), want the binary as hello, mode 755", h.Name, h.Mode, data)
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("layer holds more than the binary: %v", err)
	}
}
