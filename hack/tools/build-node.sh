#!/usr/bin/env bash
# Builds the real node of the local clusters — kubelet and kube-proxy at the Kubernetes version pinned in
# hack/tools/node/go.mod, which must be the control plane's (hack/tools/go.mod), and pause, the process
# of containerd's sandbox image — into bin/node/<key>/, and points bin/node/current at it. The key names
# the version and hashes the node module's files and this script, so a second run with nothing changed
# is a no-op. The control plane's module and script are left alone: its cache key does not move.
set -euo pipefail

tools=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
script="$tools/$(basename "${BASH_SOURCE[0]}")"
root=$(cd "$tools/../.." && pwd)
cd "$tools/node"

# k8s.io/kubernetes is not in the checksum database mirror reachable here; go.sum pins its hashes.
export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}k8s.io/kubernetes"
export CGO_ENABLED=0

k8s_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
control_plane_version=$(cd "$tools" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
if [[ "$k8s_version" != "$control_plane_version" ]]; then
  echo "hack/tools/node pins k8s.io/kubernetes $k8s_version, the control plane $control_plane_version: pin the same" >&2
  exit 1
fi
sum_hash=$(cat go.mod go.sum pause/main.go "$script" | sha256sum | cut -c1-12)
key="k8s-${k8s_version}_${sum_hash}"
out="$root/bin/node/$key"

if [[ -f "$out/.complete" ]]; then
  echo "node up to date: $out"
else
  echo "building kubelet and kube-proxy $k8s_version into $out (a few minutes, less with the control plane's build cache warm)"
  rm -rf "$out" "$out.partial"
  mkdir -p "$out.partial"
  # The control plane's recipe (build-control-plane.sh), so that the node reports the same version.
  major=${k8s_version#v}; major=${major%%.*}
  minor=${k8s_version#v*.}; minor=${minor%%.*}
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  set -x
  go build -trimpath -ldflags "$ldflags" -o "$out.partial/kubelet" k8s.io/kubernetes/cmd/kubelet
  go build -trimpath -ldflags "$ldflags" -o "$out.partial/kube-proxy" k8s.io/kubernetes/cmd/kube-proxy
  go build -trimpath -ldflags "-s -w" -o "$out.partial/pause" ./pause
  set +x
  touch "$out.partial/.complete"
  mv "$out.partial" "$out"
  # Builds of earlier pins are of no further use.
  find "$root/bin/node" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
fi

ln -sfn "$key" "$root/bin/node/current"
"$out/kubelet" --version
"$out/kube-proxy" --version
