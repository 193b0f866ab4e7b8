#!/usr/bin/env bash
# Runs Ferry as users install it, on kind: a hub (kind cluster ferry-hub) and two managed clusters
# (ferry-cluster1, ferry-cluster2, registered on the hub as cluster1 and cluster2), the images of
# `make images` loaded into them, deploy/hub and deploy/agent/spoke applied, and then the end-to-end
# suite (test/e2e) against them. See hack/kind/README.md.
#
#   hack/kind/e2e.sh [--dry-run] [up|test|down]     (no subcommand: up, then test)
#
# --dry-run (or FERRY_KIND_DRY_RUN=1) needs no Docker: given the kubeconfigs of existing clusters in
# HUB_KUBECONFIG, SPOKE1_KUBECONFIG and SPOKE2_KUBECONFIG, it prints the kind and make steps instead
# of running them, applies every manifest with --dry-run=server, and registers the two spokes for real.
# go test ./hack/kind runs it that way against local API servers.
set -euo pipefail

# Only builtins until the tools are checked, so that a missing one is named, not stumbled over.
here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
root=$(cd "$here/../.." && pwd)

# The node image is the one kind v0.33.0 publishes for Kubernetes 1.35 (its release notes); the
# digest pins the build for that kind release. Another kind release wants an image of its own notes.
node_image_from_user=${KIND_NODE_IMAGE:+1}
KIND_NODE_IMAGE=${KIND_NODE_IMAGE:-kindest/node:v1.35.8@sha256:07b2536e30b803ed61d1677a79df6115f798ce64c80f9e22f6ed45afd09323c0}
kind_release=v0.33.0
hub_cluster=ferry-hub
# kind cluster → the name the hub knows it by (the suite wants cluster1 and cluster2).
spoke_clusters=(ferry-cluster1 ferry-cluster2)
spoke_names=(cluster1 cluster2)
state_dir=${FERRY_KIND_DIR:-$root/.local/kind}
bin_dir=${FERRY_KIND_BIN_DIR:-$root/bin}
rollout_timeout=${FERRY_KIND_ROLLOUT_TIMEOUT:-5m}
# The tests of test/e2e that run against given clusters; the others stop and kill API servers and
# processes, so they always start local clusters of their own.
e2e_tests='^TestApplicationAndManifestWorkThroughTheRealBinaries$'

dry_run=0
[[ ${FERRY_KIND_DRY_RUN:-} == 1 || ${FERRY_KIND_DRY_RUN:-} == true ]] && dry_run=1

usage() {
  cat <<EOF
usage: hack/kind/e2e.sh [--dry-run] [up|test|down]

  up      create the kind clusters $hub_cluster, ${spoke_clusters[*]} (unless they exist), load the
          images of make images, install deploy/hub and deploy/agent/spoke, register ${spoke_names[*]}
  test    run the end-to-end suite (test/e2e) against them
  down    delete the kind clusters
  (none)  up, then test

  --dry-run, FERRY_KIND_DRY_RUN=1   no Docker needed: against the existing clusters of HUB_KUBECONFIG,
          SPOKE1_KUBECONFIG and SPOKE2_KUBECONFIG, print the kind and make steps, apply with
          --dry-run=server, register the spokes for real

  KIND_NODE_IMAGE ($KIND_NODE_IMAGE)
  FERRY_KIND_DIR ($state_dir): kubeconfigs;  FERRY_KIND_BIN_DIR ($bin_dir): ferry-hub
EOF
}

say() { printf '\n==> %s\n' "$*"; }
die() {
  printf 'hack/kind/e2e.sh: %s\n' "$*" >&2
  exit 1
}

# require TOOL...: fails naming every missing tool with where to get it, not only the first.
require() {
  local missing=() tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 && continue
    case $tool in
      docker) missing+=("docker: install Docker Engine (https://docs.docker.com/engine/install/); without Docker, run with --dry-run against existing clusters, or use make demo") ;;
      kind) missing+=("kind: go install sigs.k8s.io/kind@$kind_release (the release KIND_NODE_IMAGE is built for)") ;;
      kubectl) missing+=("kubectl: apt-get install kubectl, or https://kubernetes.io/docs/tasks/tools/") ;;
      go) missing+=("go: Go 1.25 or newer, https://go.dev/doc/install") ;;
      *) missing+=("$tool: install it with your package manager") ;;
    esac
  done
  ((${#missing[@]} == 0)) && return
  printf 'hack/kind/e2e.sh: missing tools:\n' >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
}

# require_docker_daemon: the docker client alone cannot run kind nodes.
require_docker_daemon() {
  docker info >/dev/null 2>&1 ||
    die "docker is installed but no Docker daemon answers (docker info fails): start Docker, or run with --dry-run against existing clusters"
}

# warn_kind_release: kind supports a node image only with the release that built it.
warn_kind_release() {
  local version
  version=$(kind version 2>/dev/null || true)
  if [[ -z $node_image_from_user && $version != *" $kind_release "* ]]; then
    echo "warning: ${version:-kind}: the default KIND_NODE_IMAGE is built for kind $kind_release; set KIND_NODE_IMAGE to an image your kind release lists" >&2
  fi
}

# host runs a step on the Docker host (kind, make images). A dry run prints it instead: there
# may be no Docker daemon, and the clusters it would act on are given, not made.
host() {
  if ((dry_run)); then
    echo "[dry run, not run] $*"
    return
  fi
  echo "+ $*"
  "$@"
}

# kube_apply KUBECONFIG ARGS...: every manifest this script applies goes through here, so none can
# escape a dry run. There the API server validates, defaults and admits each object (--dry-run=server)
# and keeps none.
kube_apply() {
  local kubeconfig=$1
  shift
  local args=(--kubeconfig "$kubeconfig" apply "$@")
  if ((dry_run)); then
    args+=(--dry-run=server)
  fi
  echo "+ kubectl ${args[*]}"
  kubectl "${args[@]}"
}

# deployment_exists KUBECONFIG NAMESPACE NAME
deployment_exists() {
  kubectl --kubeconfig "$1" -n "$2" get deployment "$3" >/dev/null 2>&1
}

# roll_out KUBECONFIG NAMESPACE NAME EXISTED: waits until the Deployment's pods are ready. One that
# existed before this run is restarted first: the image just loaded has the tag the running pods run
# (:dev, the same on every build), so the Deployment's pod template does not change and nothing rolls;
# the running containers would keep the old binary. New pods start from the image now under that tag.
roll_out() {
  local kubeconfig=$1 namespace=$2 name=$3 existed=$4
  if ((dry_run)); then
    echo "[dry run, not run] kubectl --kubeconfig $kubeconfig -n $namespace rollout status deployment/$name"
    return
  fi
  if ((existed)); then
    kubectl --kubeconfig "$kubeconfig" -n "$namespace" rollout restart "deployment/$name"
  fi
  kubectl --kubeconfig "$kubeconfig" -n "$namespace" rollout status "deployment/$name" --timeout="$rollout_timeout"
}

# server_of KUBECONFIG: the API server URL of its current context.
server_of() {
  kubectl --kubeconfig "$1" config view --minify -o 'jsonpath={.clusters[0].cluster.server}'
}

# wanted_image KUSTOMIZATION IMAGE: the reference the kustomization's Deployment runs for IMAGE
# (ferry.io/ferry-hub:dev), as its images: entry sets it.
wanted_image() {
  local ref
  ref=$(kubectl kustomize "$1" | sed -n "s|^[ -]*image: \($2\([:@].*\)\{0,1\}\)\$|\1|p" | head -n 1)
  [[ -n $ref ]] || die "$1 runs no image $2"
  [[ ${ref##*/} == *[:@]* ]] || ref=$ref:latest
  echo "$ref"
}

# check_archive ARCHIVE REF: fails unless the docker archive names its image REF (manifest.json
# RepoTags, the names `kind load image-archive` gives it). make images tags each image both by commit
# and with the tag deploy/ runs, so this holds unless the archive is stale or a kustomization was
# retagged without hack/image: then the pods would sit in ImagePullBackOff until the rollout times out.
check_archive() {
  if ((dry_run)); then
    echo "[dry run, not run] check that ${1##*/} names $2"
    return
  fi
  local repo_tags
  repo_tags=$(tar -xOf "$1" manifest.json | sed -n 's/.*"RepoTags":\(\[[^]]*\]\).*/\1/p')
  [[ $repo_tags == *"\"$2\""* ]] ||
    die "$1 names its image ${repo_tags:-by nothing}, not $2 that the install runs: run make images (deployTag in hack/image/image.go must be the kustomizations' newTag)"
}

# load_image IMAGE KUSTOMIZATION CLUSTER...: puts the archive of IMAGE on every node of each CLUSTER.
# The archive already names the image as KUSTOMIZATION's Deployment runs it (ferry.io/ferry-hub:dev).
load_image() {
  local image=$1 kustomization=$2 archive wanted cluster
  shift 2
  archive=$root/bin/images/${image##*/}.tar
  wanted=$(wanted_image "$kustomization" "$image")
  check_archive "$archive" "$wanted"
  for cluster in "$@"; do
    host kind load image-archive "$archive" --name "$cluster"
  done
}

# The kubeconfigs this run acts on: given in a dry run, kind's otherwise.
hub_kubeconfig=
spoke_kubeconfigs=()
hub_server=

given_kubeconfigs() {
  local name
  for name in HUB_KUBECONFIG SPOKE1_KUBECONFIG SPOKE2_KUBECONFIG; do
    [[ -n ${!name:-} ]] || die "--dry-run acts on existing clusters: set HUB_KUBECONFIG, SPOKE1_KUBECONFIG and SPOKE2_KUBECONFIG ($name is empty)"
    [[ -r ${!name} ]] || die "$name=${!name}: no such readable file"
  done
  hub_kubeconfig=${HUB_KUBECONFIG:-}
  spoke_kubeconfigs=("$SPOKE1_KUBECONFIG" "$SPOKE2_KUBECONFIG")
  # Registration writes this URL into the agents' credential: these clusters reach each other as
  # this process reaches the hub.
  hub_server=$(server_of "$hub_kubeconfig")
}

# kind_kubeconfigs writes kind's kubeconfigs into the state directory. The hub's URL for the agents
# is the one other kind nodes reach it at (kind get kubeconfig --internal): the hub's container name
# on the kind network, not the port on this host.
kind_kubeconfigs() {
  local i
  mkdir -p "$state_dir"
  hub_kubeconfig=$state_dir/hub.kubeconfig
  kind get kubeconfig --name "$hub_cluster" >"$hub_kubeconfig"
  kind get kubeconfig --internal --name "$hub_cluster" >"$state_dir/hub-internal.kubeconfig"
  hub_server=$(server_of "$state_dir/hub-internal.kubeconfig")
  spoke_kubeconfigs=()
  for i in "${!spoke_clusters[@]}"; do
    spoke_kubeconfigs+=("$state_dir/${spoke_names[$i]}.kubeconfig")
    kind get kubeconfig --name "${spoke_clusters[$i]}" >"${spoke_kubeconfigs[$i]}"
  done
}

create_clusters() {
  say "kind clusters $hub_cluster ${spoke_clusters[*]} (node image $KIND_NODE_IMAGE)"
  local existing="" cluster
  if ((!dry_run)); then
    existing=$(kind get clusters 2>/dev/null)
  fi
  mkdir -p "$state_dir"
  for cluster in "$hub_cluster" "${spoke_clusters[@]}"; do
    if grep -qx -- "$cluster" <<<"$existing"; then
      echo "kind cluster $cluster exists"
      continue
    fi
    # --kubeconfig: leave the user's ~/.kube/config and current context alone.
    host kind create cluster --name "$cluster" --image "$KIND_NODE_IMAGE" --wait 2m --kubeconfig "$state_dir/kind-create.kubeconfig"
  done
}

load_images() {
  say "images: make images, then kind load into the clusters that run them"
  host make -C "$root" images
  load_image ferry.io/ferry-hub "$root/deploy/hub" "$hub_cluster"
  load_image ferry.io/ferry-agent "$root/deploy/agent/spoke" "${spoke_clusters[@]}"
}

install_hub() {
  say "hub: deploy/hub and the agents' ClusterRole"
  local existed=0
  ((!dry_run)) && deployment_exists "$hub_kubeconfig" ferry-system ferry-hub && existed=1
  kube_apply "$hub_kubeconfig" -k "$root/deploy/hub"
  kube_apply "$hub_kubeconfig" -f "$root/deploy/agent/hub-clusterrole.yaml"
  roll_out "$hub_kubeconfig" ferry-system ferry-hub "$existed"
}

register_spokes() {
  say "register ${spoke_names[*]} on the hub (agents reach it at $hub_server)"
  # Built as the images build it (hack/image, internal/testing/gobuild): a static, stripped binary, and the
  # same build cache as the tests' and the images' builds of ferry-hub.
  echo "+ (cd $root && CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags='-s -w' -o $bin_dir/ferry-hub ./cmd/hub)"
  (cd "$root" && CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags='-s -w' -o "$bin_dir/ferry-hub" ./cmd/hub)
  local i
  for i in "${!spoke_names[@]}"; do
    echo "+ ferry-hub clusters add ${spoke_names[$i]} --kubeconfig $hub_kubeconfig --hub-server $hub_server --spoke-kubeconfig ${spoke_kubeconfigs[$i]}"
    "$bin_dir/ferry-hub" clusters add "${spoke_names[$i]}" --kubeconfig "$hub_kubeconfig" \
      --hub-server "$hub_server" --spoke-kubeconfig "${spoke_kubeconfigs[$i]}"
  done
}

install_agents() {
  local i existed
  for i in "${!spoke_names[@]}"; do
    say "${spoke_names[$i]}: deploy/agent/spoke"
    existed=0
    ((!dry_run)) && deployment_exists "${spoke_kubeconfigs[$i]}" ferry-agent ferry-agent && existed=1
    kube_apply "${spoke_kubeconfigs[$i]}" -k "$root/deploy/agent/spoke"
    roll_out "${spoke_kubeconfigs[$i]}" ferry-agent ferry-agent "$existed"
  done
}

up() {
  if ((dry_run)); then
    require kubectl go
    given_kubeconfigs
    create_clusters
  else
    require docker kind kubectl go make tar
    require_docker_daemon
    warn_kind_release
    create_clusters
    kind_kubeconfigs
  fi
  load_images
  install_hub
  register_spokes
  install_agents
  say "up: hub $hub_kubeconfig, spokes ${spoke_kubeconfigs[*]}"
}

run_suite() {
  if ((dry_run)); then
    [[ -n $hub_kubeconfig ]] || given_kubeconfigs
  elif [[ -z $hub_kubeconfig ]]; then
    require docker kind kubectl go
    require_docker_daemon
    kind_kubeconfigs
  fi
  local spokes="" i
  for i in "${!spoke_names[@]}"; do
    spokes+="${spokes:+,}${spoke_names[$i]}=${spoke_kubeconfigs[$i]}"
  done
  local suite=(go test -count=1 -timeout 20m ./test/e2e/ -run "$e2e_tests" -v)
  say "end-to-end suite against the hub and ${spoke_names[*]}"
  if ((dry_run)); then
    echo "[dry run, not run] FERRY_E2E_HUB_KUBECONFIG=$hub_kubeconfig FERRY_E2E_SPOKE_KUBECONFIGS=$spokes ${suite[*]}"
    return
  fi
  echo "+ FERRY_E2E_HUB_KUBECONFIG=$hub_kubeconfig FERRY_E2E_SPOKE_KUBECONFIGS=$spokes ${suite[*]}"
  (cd "$root" && FERRY_E2E_HUB_KUBECONFIG=$hub_kubeconfig FERRY_E2E_SPOKE_KUBECONFIGS=$spokes "${suite[@]}")
}

down() {
  if ((!dry_run)); then
    require docker kind
    require_docker_daemon
  fi
  say "delete kind clusters $hub_cluster ${spoke_clusters[*]}"
  local cluster
  for cluster in "$hub_cluster" "${spoke_clusters[@]}"; do
    host kind delete cluster --name "$cluster"
  done
  ((dry_run)) || rm -rf "$state_dir"
}

main() {
  local commands=() arg
  for arg in "$@"; do
    case $arg in
      --dry-run) dry_run=1 ;;
      -h | --help)
        usage
        return
        ;;
      up | test | down) commands+=("$arg") ;;
      *)
        usage >&2
        die "unknown argument $arg"
        ;;
    esac
  done
  ((${#commands[@]} > 0)) || commands=(up test)
  for arg in "${commands[@]}"; do
    case $arg in
      up) up ;;
      test) run_suite ;;
      down) down ;;
    esac
  done
}

main "$@"
