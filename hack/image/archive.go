package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// writeDockerArchive writes img to path as a docker archive (the format of `docker save`, which
// `docker load` and `kind load image-archive` read), named by every one of tags in their order, every
// file of the archive with the time modTime. It is written beside path and renamed, so that an
// interrupted build never leaves a truncated archive that `docker load` would half read.
//
// Not tarball.MultiRefWriteToFile: it collects an image's tags through a Go map, so the order of
// manifest.json's RepoTags changes from one run to the next, and two builds of one checkout would give
// different archives. The library still decides the archive's contents (ComputeManifest names the
// config and layer files); this only fixes their order: the config, the layers, then manifest.json,
// as the library writes them.
func writeDockerArchive(path string, img v1.Image, tags []name.Tag, modTime time.Time) error {
	manifest, err := dockerManifest(img, tags)
	if err != nil {
		return fmt.Errorf("docker archive %s: %w", path, err)
	}
	partial := path + ".partial"
	f, err := os.Create(partial)
	if err != nil {
		return fmt.Errorf("docker archive %s: %w", path, err)
	}
	err = writeArchiveEntries(f, img, manifest, modTime)
	if err = errors.Join(err, f.Close()); err != nil {
		return errors.Join(fmt.Errorf("write docker archive %s: %w", path, err), os.Remove(partial))
	}
	return os.Rename(partial, path)
}

// dockerManifest is the archive's manifest.json: one entry, img, with RepoTags in the order of tags.
func dockerManifest(img v1.Image, tags []name.Tag) (tarball.Manifest, error) {
	if len(tags) == 0 {
		return nil, errors.New("no tag to name the image by")
	}
	refs := make(map[name.Reference]v1.Image, len(tags))
	repoTags := make([]string, 0, len(tags))
	for _, t := range tags {
		refs[t] = img
		repoTags = append(repoTags, t.String())
	}
	manifest, err := tarball.ComputeManifest(refs)
	if err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	if len(manifest) != 1 {
		return nil, fmt.Errorf("manifest.json: %d entries for one image", len(manifest))
	}
	manifest[0].RepoTags = repoTags
	return manifest, nil
}

func writeArchiveEntries(w io.Writer, img v1.Image, manifest tarball.Manifest, modTime time.Time) error {
	tw := tar.NewWriter(w)
	config, err := img.RawConfigFile()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := writeArchiveFile(tw, manifest[0].Config, bytes.NewReader(config), int64(len(config)), modTime); err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return fmt.Errorf("layers: %w", err)
	}
	if len(layers) != len(manifest[0].Layers) {
		return fmt.Errorf("manifest.json names %d layers, the image has %d", len(manifest[0].Layers), len(layers))
	}
	written := map[string]bool{}
	for i, l := range layers {
		// A layer an image holds twice is one file, as the library writes it.
		if written[manifest[0].Layers[i]] {
			continue
		}
		written[manifest[0].Layers[i]] = true
		if err := writeLayerFile(tw, manifest[0].Layers[i], l, modTime); err != nil {
			return err
		}
	}
	data, err := json.Marshal(manifest)
	if err != nil {
		return fmt.Errorf("manifest.json: %w", err)
	}
	if err := writeArchiveFile(tw, "manifest.json", bytes.NewReader(data), int64(len(data)), modTime); err != nil {
		return err
	}
	return tw.Close()
}

func writeLayerFile(tw *tar.Writer, fileName string, l v1.Layer, modTime time.Time) error {
	size, err := l.Size()
	if err != nil {
		return fmt.Errorf("layer %s: %w", fileName, err)
	}
	r, err := l.Compressed()
	if err != nil {
		return fmt.Errorf("layer %s: %w", fileName, err)
	}
	defer r.Close()
	return writeArchiveFile(tw, fileName, r, size, modTime)
}

func writeArchiveFile(tw *tar.Writer, fileName string, r io.Reader, size int64, modTime time.Time) error {
	h := &tar.Header{Name: fileName, Mode: 0o644, Typeflag: tar.TypeReg, Size: size, ModTime: modTime}
	if err := tw.WriteHeader(h); err != nil {
		return fmt.Errorf("tar header %s: %w", fileName, err)
	}
	if _, err := io.Copy(tw, r); err != nil {
		return fmt.Errorf("tar %s: %w", fileName, err)
	}
	return nil
}
