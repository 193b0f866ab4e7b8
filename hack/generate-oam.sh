#!/usr/bin/env bash
# Generates, with the controller-gen pinned in hack/tools, the deepcopy code of the OAM API types in
# pkg/apis/core/v1alpha2 and their CRDs in manifests/oam/. Run through `make manifests`; the result is
# committed. With --verify it generates into a temporary directory instead and fails when the committed
# files differ, leaving the tree untouched.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
hack/tools/build-controller-gen.sh
gen=bin/tools/controller-gen
api=pkg/apis/core/v1alpha2
crds=manifests/oam

if [[ "${1:-}" == "--verify" ]]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  "$gen" object crd:crdVersions=v1 paths="./$api/..." output:object:dir="$tmp/api" output:crd:dir="$tmp/crds"
  ok=true
  diff -u "$api/zz_generated.deepcopy.go" "$tmp/api/zz_generated.deepcopy.go" || ok=false
  diff -ru "$crds" "$tmp/crds" || ok=false
  if ! $ok; then
    echo "generated OAM code in $api or $crds is out of date: run make manifests and commit" >&2
    exit 1
  fi
  exit 0
fi

# Stale CRDs of renamed or removed kinds must not linger, and must not be embedded.
rm -f "$crds"/*.yaml
"$gen" object crd:crdVersions=v1 paths="./$api/..." output:crd:dir="$crds"
echo "generated $api/zz_generated.deepcopy.go and $(find "$crds" -name '*.yaml' | wc -l) CRDs in $crds"
