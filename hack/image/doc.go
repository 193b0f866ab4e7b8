// Command ferry-image builds Ferry's container images — ferry-hub and ferry-agent, one static binary
// each on an empty base — without a Docker daemon, and writes them under bin/images/ as docker-archive
// tarballs (for `docker load` and `kind load image-archive`) and as one OCI image layout holding both.
// Each image is named twice, ferry.io/<name>:<git describe> and ferry.io/<name>:dev, the tag deploy/
// runs, so that a loaded archive is what `kubectl apply -k deploy/...` starts.
// `make images` runs it; the main entry point is buildImages, which the test runs too.
//
// Why go-containerregistry and not ko or buildah: there is no Docker daemon on the development machines
// or in CI, and go-containerregistry needs none; it is a Go library pinned in go.mod like every other
// dependency, so the image is built by the pinned Go toolchain with no tool to install (ko would be one
// more binary to fetch and pin, buildah a Debian package and a storage driver to configure). Building
// in-process lets us fix every input that would make two builds differ — file times, owners, modes,
// the order of tar entries, the creation time — so the same checkout always gives the same digest, and
// lets a go test build the very same images and run what is inside them.
//
// The Dockerfile at the root of the repository builds an equivalent image for people who have Docker.
package main
