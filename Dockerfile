# syntax=docker/dockerfile:1
#
# Ferry's images, for people who build with Docker:
#
#   docker build --build-arg BINARY=agent -t ferry.io/ferry-agent:dev \
#     --build-arg REVISION="$(git rev-parse HEAD)" --build-arg VERSION="$(git describe --tags --always --dirty)" \
#     --build-arg CREATED="$(date -u -d @"$(git log -1 --format=%ct)" +%Y-%m-%dT%H:%M:%SZ)" .
#
# (BINARY=hub for ferry-hub.) It builds what `make images` builds without Docker (hack/image): the same
# static binary with the same flags at /ferry-<BINARY>, /etc/passwd and /etc/group from
# hack/image/rootfs, /tmp, nothing else, run as 65532:65532 with the same labels. Its digests differ
# from those of `make images` (Docker writes its own layer metadata). Nothing here is built on the
# development machines or in CI, which have no Docker: `make images` and the test in hack/image, which
# runs the binaries from the unpacked images, are what is tested. Keep the two in step.

# Declared before the first FROM so that the last FROM can name a stage after it.
ARG BINARY=agent

FROM golang:1.25 AS build
ARG BINARY
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO_ENABLED=0: a static binary, for an image with no libc and no loader. /work, a link to ferry-agent:
# where the klusterlet starts OCM's work agent, so that it can run ferry-agent's image.
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -buildvcs=false -ldflags="-s -w" \
      -o /rootfs/ferry-${BINARY} ./cmd/${BINARY} \
 && mkdir -p /rootfs/etc /rootfs/tmp \
 && chmod 1777 /rootfs/tmp \
 && install -m 0644 hack/image/rootfs/etc/passwd hack/image/rootfs/etc/group /rootfs/etc/ \
 && if [ "${BINARY}" = agent ]; then ln -s ferry-agent /rootfs/work; fi

# ENTRYPOINT does not expand build arguments, so each binary has a stage of its own.
FROM scratch AS ferry-hub
COPY --from=build /rootfs/ /
ENTRYPOINT ["/ferry-hub"]
LABEL org.opencontainers.image.title="ferry-hub" \
      org.opencontainers.image.description="Ferry hub controller: OAM ApplicationConfigurations in, one ManifestWork per managed cluster out"

FROM scratch AS ferry-agent
COPY --from=build /rootfs/ /
ENTRYPOINT ["/ferry-agent"]
LABEL org.opencontainers.image.title="ferry-agent" \
      org.opencontainers.image.description="Ferry work agent: applies its managed cluster's ManifestWorks and reports their status to the hub"

FROM ferry-${BINARY}
ARG REVISION=unknown
ARG VERSION=unknown
ARG CREATED=1970-01-01T00:00:00Z
USER 65532:65532
WORKDIR /
LABEL org.opencontainers.image.source="https://github.com/ferry-mc/ferry" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.created="${CREATED}"
