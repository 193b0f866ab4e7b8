#!/usr/bin/env bash
# Builds OCM's own agents, Ferry's test peers, at the version pinned in hack/tools/ocm/go.mod into
# bin/ocm-peers/<key>/ and points bin/ocm-peers/current at it: the work agent (`work`, the binary the
# klusterlet runs as `/work agent …`), which the takeover test runs before ferry-agent replaces it; the
# registration agent and hub controller (`registration`) and the klusterlet operator
# (`registration-operator`), which test/node runs as `clusteradm join` installs them; and
# `render-klusterlet`, which renders what `clusteradm join` applies (hack/tools/ocm/render-klusterlet);
# and OCM's gRPC server (`server`, run as `server grpc`), which serves works to agents over gRPC in the
# tests of ferry-agent's grpc driver.
# The key names the pinned version and hashes the module's go.mod and go.sum, render-ocm's source and
# this script, so a second run with nothing changed is a no-op. Cold, the build takes about 10 minutes on a 2-core machine
# (the binaries share one dependency graph: most of it is compiled once).
set -euo pipefail

tools=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
script="$tools/$(basename "${BASH_SOURCE[0]}")"
root=$(cd "$tools/../.." && pwd)
cd "$tools/ocm"

export CGO_ENABLED=0

ocm_version=$(go list -m -f '{{.Version}}' open-cluster-management.io/ocm)
sum_hash=$(cat go.mod go.sum render-ocm/*.go "$script" | sha256sum | cut -c1-12)
key="ocm-${ocm_version}_${sum_hash}"
out="$root/bin/ocm-peers/$key"

if [[ -f "$out/.complete" ]]; then
  echo "OCM test peers up to date: $out"
else
  echo "building OCM's agents $ocm_version into $out (about 10 minutes cold)"
  rm -rf "$out" "$out.partial"
  mkdir -p "$out.partial"
  set -x
  go build -trimpath -ldflags "-s -w" -o "$out.partial/" \
    open-cluster-management.io/ocm/cmd/work \
    open-cluster-management.io/ocm/cmd/registration \
    open-cluster-management.io/ocm/cmd/registration-operator \
    open-cluster-management.io/ocm/cmd/server \
    ./render-ocm
  set +x
  # The hub's CRDs as OCM's cluster-manager operator installs them, but for the two add-on CRDs: OCM's
  # copies are templates naming the add-on webhook for conversion, which a test hub does not run, so
  # the API module's own (v1alpha1 only) stand in.
  mkdir "$out.partial/hub-crds"
  ocm_dir=$(go list -m -f '{{.Dir}}' open-cluster-management.io/ocm)
  api_dir=$(go list -m -f '{{.Dir}}' open-cluster-management.io/api)
  for crd in "$ocm_dir"/manifests/cluster-manager/hub/crds/*.yaml; do
    if grep -q '{{' "$crd"; then
      cp "$api_dir/addon/v1alpha1/$(basename "$crd")" "$out.partial/hub-crds/"
    else
      cp "$crd" "$out.partial/hub-crds/"
    fi
  done
  touch "$out.partial/.complete"
  mv "$out.partial" "$out"
  find "$root/bin/ocm-peers" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
fi

ln -sfn "$key" "$root/bin/ocm-peers/current"
echo "OCM's agents $ocm_version: $out/{work,registration,registration-operator,server,render-ocm,hub-crds}"
