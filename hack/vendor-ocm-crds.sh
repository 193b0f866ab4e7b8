#!/usr/bin/env bash
# Copies the Open Cluster Management CRDs that Ferry serves from the pinned OCM api module into
# manifests/ocm/, and extends the ManifestWork update-strategy enum with Ferry's ApplyOnce and
# ApplyOnceForce. Run through `make manifests`; the result is committed.
#
# manifests/ocm/peers holds the CRDs of OCM's own hub controllers that tests run beside ferry-agent as
# peers (bin/ocm-peers): OCM's hub serves them, Ferry's does not, so they are neither embedded in
# manifests.HubCRDs nor copied into deploy/; a test installs them on its local hub.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
src=$(go list -m -f '{{.Dir}}' open-cluster-management.io/api)
dst=manifests/ocm

hub=(
  work/v1/0000_00_work.open-cluster-management.io_manifestworks.crd.yaml
  cluster/v1/0000_00_clusters.open-cluster-management.io_managedclusters.crd.yaml
  cluster/v1beta2/0000_00_clusters.open-cluster-management.io_managedclustersets.crd.yaml
  cluster/v1beta2/0000_01_clusters.open-cluster-management.io_managedclustersetbindings.crd.yaml
  cluster/v1beta1/0000_02_clusters.open-cluster-management.io_placements.crd.yaml
  cluster/v1beta1/0000_03_clusters.open-cluster-management.io_placementdecisions.crd.yaml
)
spoke=(
  cluster/v1alpha1/0000_02_clusters.open-cluster-management.io_clusterclaims.crd.yaml
  work/v1/0000_01_work.open-cluster-management.io_appliedmanifestworks.crd.yaml
)
# The ManifestWorkReplicaSet, which `work manager` (OCM's work hub controller) rolls out.
peers=(
  work/v1alpha1/0000_00_work.open-cluster-management.io_manifestworkreplicasets.crd.yaml
)

rm -f "$dst"/hub/*.yaml "$dst"/spoke/*.yaml "$dst"/peers/*.yaml
mkdir -p "$dst/hub" "$dst/spoke" "$dst/peers"
for f in "${hub[@]}"; do install -m 0644 "$src/$f" "$dst/hub/$(basename "$f")"; done
for f in "${spoke[@]}"; do install -m 0644 "$src/$f" "$dst/spoke/$(basename "$f")"; done
for f in "${peers[@]}"; do install -m 0644 "$src/$f" "$dst/peers/$(basename "$f")"; done

# The update-strategy enum is the only list in the ManifestWork CRD that ends in "- ReadOnly".
mw="$dst/hub/0000_00_work.open-cluster-management.io_manifestworks.crd.yaml"
awk '
  { print }
  /^ *- ReadOnly$/ {
    indent = $0; sub(/-.*/, "", indent)
    print indent "- ApplyOnce"
    print indent "- ApplyOnceForce"
    patched++
  }
  END { if (patched != 1) { print "expected one update-strategy enum, found " patched > "/dev/stderr"; exit 1 } }
' "$mw" > "$mw.tmp"
mv "$mw.tmp" "$mw"
echo "vendored $(( ${#hub[@]} + ${#spoke[@]} + ${#peers[@]} )) CRDs from $src into $dst"
