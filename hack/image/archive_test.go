package main

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// An image named by two tags is written the same way every time: tarball.MultiRefWriteToFile orders
// RepoTags by Go's map iteration, which would make two builds of one checkout differ in about half the
// runs. Twenty writes of one image give one archive, byte for byte.
func TestDockerArchiveIsTheSameEveryTime(t *testing.T) {
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	var tags []name.Tag
	for _, ref := range []string{"ferry.io/ferry-test:v1.2.3-4-gabcdef0", "ferry.io/ferry-test:dev"} {
		tag, err := name.NewTag(ref)
		if err != nil {
			t.Fatal(err)
		}
		tags = append(tags, tag)
	}
	created := time.Date(2025, 11, 23, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	var first string
	for i := range 20 {
		path := filepath.Join(dir, "image.tar")
		if err := writeDockerArchive(path, img, tags, created); err != nil {
			t.Fatal(err)
		}
		data := fileBytes(t, path)
		if i == 0 {
			first = data
		} else if data != first {
			t.Fatalf("write %d of the same image gave a different archive than the first", i+1)
		}
	}
	if got, want := archiveRepoTags(t, filepath.Join(dir, "image.tar")), []string{"ferry.io/ferry-test:v1.2.3-4-gabcdef0", "ferry.io/ferry-test:dev"}; !slices.Equal(got, want) {
		t.Errorf("RepoTags %q, want %q in that order", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "image.tar.partial")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the partial archive is left beside the archive (stat: %v)", err)
	}
	// What go-containerregistry reads back under each name is the image written, layers and all.
	want, _ := img.Digest()
	for _, tag := range tags {
		loaded, err := tarball.ImageFromPath(filepath.Join(dir, "image.tar"), &tag)
		if err != nil {
			t.Fatalf("read %s from the archive: %v", tag, err)
		}
		if got, err := loaded.Digest(); err != nil || got != want {
			t.Errorf("%s: digest %s (%v), want %s", tag, got, err, want)
		}
	}
}

// archiveRepoTags is the RepoTags of a docker archive's one image, read from manifest.json as
// `docker load` reads it: every name the image is loaded under.
func archiveRepoTags(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("%s has no manifest.json", path)
		}
		if err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
		if h.Name != "manifest.json" {
			continue
		}
		var manifest []struct{ RepoTags []string }
		if err := json.NewDecoder(tr).Decode(&manifest); err != nil {
			t.Fatalf("%s: manifest.json: %v", path, err)
		}
		if len(manifest) != 1 {
			t.Fatalf("%s: manifest.json lists %d images, want 1", path, len(manifest))
		}
		return manifest[0].RepoTags
	}
}
