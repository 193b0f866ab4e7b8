#!/usr/bin/env bash
# Builds controller-gen at the sigs.k8s.io/controller-tools version pinned in hack/tools/go.mod into
# bin/tools/controller-gen-<version>/ and points bin/tools/controller-gen at it. Like the control plane,
# a second run with the same pin is a no-op; a changed pin builds into a fresh directory.
set -euo pipefail

tools=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$tools/../.." && pwd)
cd "$tools"

# The tools module also pins k8s.io/kubernetes, which is not in the reachable checksum database.
export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}k8s.io/kubernetes"

version=$(go list -m -f '{{.Version}}' sigs.k8s.io/controller-tools)
dir="$root/bin/tools/controller-gen-$version"

if [[ ! -x "$dir/controller-gen" ]]; then
  echo "building controller-gen $version into $dir" >&2
  rm -rf "$dir.partial"
  mkdir -p "$dir.partial"
  go build -trimpath -o "$dir.partial/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen
  rm -rf "$dir"
  mv "$dir.partial" "$dir"
  # Builds of earlier pins are of no further use.
  find "$root/bin/tools" -mindepth 1 -maxdepth 1 -type d -name 'controller-gen-*' ! -name "controller-gen-$version" -exec rm -rf {} +
fi
ln -sfn "controller-gen-$version/controller-gen" "$root/bin/tools/controller-gen"
