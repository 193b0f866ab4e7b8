#!/usr/bin/env bash
# Builds the test control plane — etcd, kube-apiserver, kube-controller-manager and kube-scheduler at the
# versions pinned in hack/tools/go.mod, and the kwok controller (simulated nodes) at the version pinned in
# hack/tools/kwok/go.mod — into bin/control-plane/<key>/, and points bin/control-plane/current at it.
# The key names the pinned versions and hashes both modules' go.mod and go.sum and this script, so a
# second run with nothing changed is a no-op and a changed pin or build recipe builds into a fresh
# directory.
set -euo pipefail

tools=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
script="$tools/$(basename "${BASH_SOURCE[0]}")"
root=$(cd "$tools/../.." && pwd)
cd "$tools"

# k8s.io/kubernetes is not in the checksum database mirror reachable here; go.sum pins its hashes.
export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}k8s.io/kubernetes"
export CGO_ENABLED=0

k8s_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
etcd_version=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
kwok_version=$(cd kwok && go list -m -f '{{.Version}}' sigs.k8s.io/kwok)
# go.mod counts too: adding a binary to its tool block changes what is built but not go.sum.
sum_hash=$(cat go.mod go.sum kwok/go.mod kwok/go.sum "$script" | sha256sum | cut -c1-12)
key="k8s-${k8s_version}_etcd-${etcd_version}_kwok-${kwok_version}_${sum_hash}"
out="$root/bin/control-plane/$key"

if [[ -f "$out/.complete" ]]; then
  echo "control plane up to date: $out"
else
  echo "building control plane into $out (kube-apiserver takes a few minutes cold)"
  rm -rf "$out" "$out.partial"
  mkdir -p "$out.partial"
  major=${k8s_version#v}; major=${major%%.*}
  minor=${k8s_version#v*.}; minor=${minor%%.*}
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  set -x
  go build -trimpath -ldflags "$ldflags" -o "$out.partial/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
  go build -trimpath -ldflags "$ldflags" -o "$out.partial/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager
  go build -trimpath -ldflags "$ldflags" -o "$out.partial/kube-scheduler" k8s.io/kubernetes/cmd/kube-scheduler
  go build -trimpath -ldflags "-s -w" -o "$out.partial/etcd" go.etcd.io/etcd/server/v3
  # kwok's own module, so that it builds against the Kubernetes libraries it was released with.
  (cd kwok && go build -trimpath -ldflags "-s -w" -o "$out.partial/kwok" sigs.k8s.io/kwok/cmd/kwok)
  set +x
  touch "$out.partial/.complete"
  mv "$out.partial" "$out"
  # Builds of earlier pins are of no further use.
  find "$root/bin/control-plane" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
fi

ln -sfn "$key" "$root/bin/control-plane/current"
# The first line only; head would close the pipe early and, under pipefail, fail on etcd's SIGPIPE.
etcd_line=$("$out/etcd" --version)
echo "${etcd_line%%$'\n'*}"
"$out/kube-apiserver" --version
"$out/kube-scheduler" --version
"$out/kwok" --version
