package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Where the images say they come from.
const (
	sourceURL = "https://github.com/ferry-mc/ferry"
	// registry is the repository prefix of the tags the tarballs carry. Nothing is pushed; it only
	// names the images once loaded (`docker load`, `kind load image-archive`).
	registry = "ferry.io"
	// deployTag is the tag deploy/hub and deploy/agent/spoke run (their kustomizations' images: newTag).
	// Every image carries it beside its version tag, so that an archive loaded with `kind load
	// image-archive` or `docker load` is what `kubectl apply -k deploy/...` runs, with no re-tagging.
	deployTag = "dev"
	// license is the SPDX identifier for org.opencontainers.image.licenses. The repository has no
	// licence yet, so the label is left out; set this when it gets one.
	license = ""
)

// OCI annotation keys used as labels (https://github.com/opencontainers/image-spec/blob/main/annotations.md).
const (
	labelSource      = "org.opencontainers.image.source"
	labelRevision    = "org.opencontainers.image.revision"
	labelVersion     = "org.opencontainers.image.version"
	labelTitle       = "org.opencontainers.image.title"
	labelDescription = "org.opencontainers.image.description"
	labelCreated     = "org.opencontainers.image.created"
	labelLicenses    = "org.opencontainers.image.licenses"
)

// imageTags are the names of command c's image: ferry.io/<name>:<version>, which says which build it
// is, then ferry.io/<name>:<deployTag>, which deploy/ runs (once, if the version is the deploy tag).
func imageTags(c command, version string) ([]name.Tag, error) {
	var tags []name.Tag
	for _, tag := range []string{version, deployTag} {
		t, err := name.NewTag(registry + "/" + c.Name + ":" + tag)
		if err != nil {
			return nil, fmt.Errorf("tag %q: %w", tag, err)
		}
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	return tags, nil
}

// labels are the image's OCI labels.
func labels(c command, p provenance) map[string]string {
	l := map[string]string{
		labelSource:      sourceURL,
		labelRevision:    p.Revision,
		labelVersion:     p.Version,
		labelTitle:       c.Name,
		labelDescription: c.Description,
		labelCreated:     p.Created.Format(time.RFC3339),
	}
	if license != "" {
		l[labelLicenses] = license
	}
	return l
}

// newImage is the image of command c: one layer (see rootFilesystem) on an empty base, run as the
// numeric non-root user, with c's binary as the entrypoint.
func newImage(c command, binary []byte, arch string, p provenance) (v1.Image, error) {
	tarData, err := rootFilesystem(c.Name, c.Aliases, binary, p.Created)
	if err != nil {
		return nil, err
	}
	layer, err := layerOf(tarData)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: p.Created}, CreatedBy: "ferry-image: /" + c.Name + " from " + c.Package, Comment: "static Go binary"},
	})
	if err != nil {
		return nil, fmt.Errorf("add layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Created = v1.Time{Time: p.Created}
	cfg.Author = sourceURL
	cfg.Config = v1.Config{
		Entrypoint: []string{"/" + c.Name},
		User:       nonrootUser,
		WorkingDir: "/",
		Labels:     labels(c, p),
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("set config: %w", err)
	}
	return img, nil
}
