#!/usr/bin/env bash
# Builds OCM's own agents, Ferry's test peers, at the version pinned in hack/tools/ocm/go.mod into
# bin/ocm-peers/<key>/ and points bin/ocm-peers/current at it: today the work agent (`work`, the binary
# the klusterlet runs as `/work agent …`), which the takeover test runs before ferry-agent replaces it.
# The key names the pinned version and hashes the module's go.mod and go.sum and this script, so a
# second run with nothing changed is a no-op. Cold, the build takes about 7 minutes on a 2-core machine.
set -euo pipefail

tools=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
script="$tools/$(basename "${BASH_SOURCE[0]}")"
root=$(cd "$tools/../.." && pwd)
cd "$tools/ocm"

export CGO_ENABLED=0

ocm_version=$(go list -m -f '{{.Version}}' open-cluster-management.io/ocm)
sum_hash=$(cat go.mod go.sum "$script" | sha256sum | cut -c1-12)
key="ocm-${ocm_version}_${sum_hash}"
out="$root/bin/ocm-peers/$key"

if [[ -f "$out/.complete" ]]; then
  echo "OCM test peers up to date: $out"
else
  echo "building OCM's work agent $ocm_version into $out (a few minutes cold)"
  rm -rf "$out" "$out.partial"
  mkdir -p "$out.partial"
  set -x
  go build -trimpath -ldflags "-s -w" -o "$out.partial/work" open-cluster-management.io/ocm/cmd/work
  set +x
  touch "$out.partial/.complete"
  mv "$out.partial" "$out"
  find "$root/bin/ocm-peers" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
fi

ln -sfn "$key" "$root/bin/ocm-peers/current"
echo "OCM work agent $ocm_version: $out/work"
