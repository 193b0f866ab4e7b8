package main

import (
	"archive/tar"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// The images every test of the package inspects, built once, the way `make images` builds them, into a
// directory removed when the tests end.
var shared struct {
	once   sync.Once
	dir    string
	prov   provenance
	images []builtImage
	err    error
}

func TestMain(m *testing.M) {
	// The local clusters log through controller-runtime's envtest; the test has nothing to say there.
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// checkoutRoot is the Ferry checkout this file is in.
func checkoutRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// images builds (once) and returns the images and the provenance they carry.
func images(t *testing.T) ([]builtImage, provenance) {
	t.Helper()
	root := checkoutRoot(t)
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		if shared.prov, shared.err = resolveProvenance(ctx, root); shared.err != nil {
			return
		}
		if shared.dir, shared.err = os.MkdirTemp("", "ferry-image-test-"); shared.err != nil {
			return
		}
		start := time.Now()
		shared.images, shared.err = buildImages(ctx, buildOptions{Root: root, OutDir: shared.dir, Arch: runtime.GOARCH, Provenance: shared.prov})
		t.Logf("images built in %s", time.Since(start).Round(100*time.Millisecond))
	})
	if shared.err != nil {
		t.Fatalf("build the images: %v", shared.err)
	}
	return shared.images, shared.prov
}

// imageOf is the built image of the command named name.
func imageOf(t *testing.T, name string) builtImage {
	t.Helper()
	built, _ := images(t)
	for _, b := range built {
		if b.Command.Name == name {
			return b
		}
	}
	t.Fatalf("no image %s was built", name)
	return builtImage{}
}

// Two builds of the same checkout must be the same image, byte for byte: anything that depends on the
// build's time, the file times of the checkout, the user building or the order of a map would show up
// here as a different digest.
func TestTwoBuildsOfTheSameCheckoutGiveTheSameDigests(t *testing.T) {
	first, prov := images(t)
	again := t.TempDir()
	second, err := buildImages(t.Context(), buildOptions{Root: checkoutRoot(t), OutDir: again, Arch: runtime.GOARCH, Provenance: prov})
	if err != nil {
		t.Fatalf("second build: %v", err)
	}
	if len(second) != len(first) {
		t.Fatalf("second build made %d images, the first %d", len(second), len(first))
	}
	for i := range first {
		if first[i].Digest != second[i].Digest {
			t.Errorf("%s: digest %s, then %s for the same checkout (did someone edit the checkout during the test?)", first[i].Command.Name, first[i].Digest, second[i].Digest)
		}
		if a, b := fileBytes(t, first[i].Tarball), fileBytes(t, second[i].Tarball); a != b {
			t.Errorf("%s: the docker archives of two builds differ", first[i].Command.Name)
		}
	}
	if a, b := fileBytes(t, filepath.Join(shared.dir, "oci", "index.json")), fileBytes(t, filepath.Join(again, "oci", "index.json")); a != b {
		t.Errorf("the OCI layouts' index.json of two builds differ:\n%s\n%s", a, b)
	}
}

func fileBytes(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// What a user's runtime reads from each image, read back from both outputs of `make images`: the docker
// archive (as `docker load` and `kind load image-archive` read it) and the OCI layout.
func TestImageConfig(t *testing.T) {
	_, prov := images(t)
	for _, c := range commands {
		t.Run(c.Name, func(t *testing.T) {
			b := imageOf(t, c.Name)
			// The version tag says which build it is; the deploy tag is what deploy/ runs (see
			// TestDeployRunsTheTagTheImagesCarry), so that loading the archive is all a kind
			// install needs. `docker load` names the image by every one of RepoTags.
			wantTags := []string{"ferry.io/" + c.Name + ":" + prov.Version, "ferry.io/" + c.Name + ":" + deployTag}
			if got := archiveRepoTags(t, b.Tarball); !slices.Equal(got, wantTags) {
				t.Errorf("docker archive %s: RepoTags %q, want %q", b.Tarball, got, wantTags)
			}
			if len(b.Tags) != len(wantTags) {
				t.Fatalf("built with tags %v, want %q", b.Tags, wantTags)
			}
			var fromTarball v1.Image
			for i, tag := range b.Tags {
				if tag.Name() != wantTags[i] {
					t.Errorf("tag %d: %s, want %s", i, tag.Name(), wantTags[i])
				}
				img, err := tarball.ImageFromPath(b.Tarball, &tag)
				if err != nil {
					t.Fatalf("docker archive %s does not hold %s: %v", b.Tarball, tag, err)
				}
				if id, err := img.ConfigName(); err != nil || id != b.ConfigDigest {
					t.Errorf("docker archive, %s: image ID %s (%v), want %s", tag, id, err, b.ConfigDigest)
				}
				fromLayout := imageInLayout(t, filepath.Join(shared.dir, "oci"), tag)
				if d, err := fromLayout.Digest(); err != nil || d != b.Digest {
					t.Errorf("OCI layout, %s: digest %s (%v), want %s", tag, d, err, b.Digest)
				}
				fromTarball = img
			}

			cfg, err := fromTarball.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"/" + c.Name}; !slices.Equal(cfg.Config.Entrypoint, want) || len(cfg.Config.Cmd) != 0 {
				t.Errorf("entrypoint %q cmd %q, want entrypoint %q and no cmd", cfg.Config.Entrypoint, cfg.Config.Cmd, want)
			}
			uid, gid, ok := numericUser(cfg.Config.User)
			if !ok || uid == 0 || gid == 0 {
				t.Errorf("user %q, want a numeric non-root uid:gid (Kubernetes' runAsNonRoot can only verify a numeric one)", cfg.Config.User)
			}
			if cfg.Config.WorkingDir != "/" {
				t.Errorf("working dir %q, want /", cfg.Config.WorkingDir)
			}
			if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
				t.Errorf("platform %s/%s, want linux/%s", cfg.OS, cfg.Architecture, runtime.GOARCH)
			}
			if !cfg.Created.Time.Equal(prov.Created) {
				t.Errorf("created %s, want the commit time %s", cfg.Created.Time, prov.Created)
			}
			wantLabels := map[string]string{
				labelSource:   "https://github.com/ferry-mc/ferry",
				labelRevision: prov.Revision,
				labelVersion:  prov.Version,
				labelTitle:    c.Name,
			}
			for k, v := range wantLabels {
				if got := cfg.Config.Labels[k]; got != v {
					t.Errorf("label %s = %q, want %q", k, got, v)
				}
			}
			if prov.Revision == unknown || len(prov.Revision) != 40 {
				t.Errorf("revision %q: the test runs in a git checkout, want its commit", prov.Revision)
			}
		})
	}
}

// numericUser parses "uid:gid".
func numericUser(user string) (uid, gid int, ok bool) {
	u, g, found := strings.Cut(user, ":")
	uid, uerr := strconv.Atoi(u)
	gid, gerr := strconv.Atoi(g)
	return uid, gid, found && uerr == nil && gerr == nil
}

// imageInLayout is the image the OCI layout at dir names tag.
func imageInLayout(t *testing.T, dir string, tag name.Tag) v1.Image {
	t.Helper()
	index, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("OCI layout %s: %v", dir, err)
	}
	m, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var named []v1.Descriptor
	for _, d := range m.Manifests {
		if d.Annotations[annotationContainerdRef] == tag.Name() && d.Annotations[annotationRefName] == tag.TagStr() {
			named = append(named, d)
		}
	}
	if len(named) != 1 {
		t.Fatalf("OCI layout %s names %d images %s, want 1", dir, len(named), tag)
	}
	img, err := index.Image(named[0].Digest)
	if err != nil {
		t.Fatalf("OCI layout %s: %s: %v", dir, tag, err)
	}
	return img
}

// The root filesystem holds the static binary and nothing a shell or a dynamically linked program would
// need: no /bin/sh, no loader, no libc; every file root's, with the time of the commit.
func TestImageFilesystem(t *testing.T) {
	_, prov := images(t)
	for _, c := range commands {
		t.Run(c.Name, func(t *testing.T) {
			b := imageOf(t, c.Name)
			root := t.TempDir()
			entries := extract(t, b.Image, root)
			want := map[string]os.FileMode{
				"etc":        os.ModeDir | 0o755,
				"etc/group":  0o644,
				"etc/passwd": 0o644,
				"tmp":        os.ModeDir | os.ModeSticky | 0o777,
				c.Name:       0o755,
			}
			for _, alias := range c.Aliases {
				want[alias] = os.ModeSymlink | 0o777
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name)
				if e.Typeflag == tar.TypeSymlink && e.Linkname != c.Name {
					t.Errorf("/%s links to %s, want /%s", e.Name, e.Linkname, c.Name)
				}
				if mode, ok := want[e.Name]; !ok {
					t.Errorf("unexpected file /%s in the image", e.Name)
				} else if e.FileInfo().Mode() != mode {
					t.Errorf("/%s: mode %s, want %s", e.Name, e.FileInfo().Mode(), mode)
				}
				if e.Uid != 0 || e.Gid != 0 {
					t.Errorf("/%s: owner %d:%d, want 0:0 (the user the binary runs as must not be able to change it)", e.Name, e.Uid, e.Gid)
				}
				if !e.ModTime.Equal(prov.Created) {
					t.Errorf("/%s: time %s, want the commit time %s", e.Name, e.ModTime, prov.Created)
				}
			}
			if !slices.IsSorted(names) {
				t.Errorf("tar entries not sorted: %q", names)
			}
			if len(entries) != len(want) {
				t.Errorf("files %q, want exactly %d", names, len(want))
			}
			for _, shell := range []string{"bin/sh", "bin/bash", "usr/bin/sh", "bin/busybox"} {
				if _, err := os.Lstat(filepath.Join(root, shell)); err == nil {
					t.Errorf("/%s in the image: it must have no shell", shell)
				}
			}
			if err := staticELF(filepath.Join(root, c.Name)); err != nil {
				t.Errorf("/%s: %v", c.Name, err)
			}
			for _, alias := range c.Aliases {
				// The path the klusterlet starts OCM's work agent at runs the same binary.
				if err := staticELF(filepath.Join(root, alias)); err != nil {
					t.Errorf("/%s: %v", alias, err)
				}
			}
		})
	}
}

// staticELF fails unless path is an ELF executable that needs no loader and no shared library: on an
// empty base image there are none, and the kernel would refuse to start it ("no such file").
func staticELF(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("dynamically linked: it needs a program interpreter, which the image does not have")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		return fmt.Errorf("needs shared libraries %q (%v)", libs, err)
	}
	return nil
}
