# Ferry — common tasks. `make help` lists them.
SHELL := /usr/bin/env bash -o pipefail -c
GO    ?= go

# The test control plane built by hack/tools (etcd, kube-apiserver, kube-controller-manager).
export FERRY_CONTROL_PLANE_DIR := $(CURDIR)/bin/control-plane/current
# OCM's own agents, built by hack/tools as test peers (`make ocm-peers`; the klusterlet swap test and test/node run them).
export FERRY_OCM_PEERS_DIR := $(CURDIR)/bin/ocm-peers/current
# The real node (kubelet, kube-proxy, pause) built by hack/tools/build-node.sh; test/node runs pods on it.
export FERRY_NODE_DIR := $(CURDIR)/bin/node/current
# Where test/node writes why it ran no test (no root, no containerd); `make test` prints it at its end.
export FERRY_REAL_NODE_NOT_RUN_FILE := $(CURDIR)/bin/real-node-not-run
# Where `make local-up` keeps kubeconfigs, its pid file and its log.
LOCAL_DIR ?= .local
KUBECTL   ?= kubectl

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: build
build: ## build ferry-hub, ferry-agent, kubectl-ferry (the kubectl plugin: put it on your PATH) and ferry-local into bin/
	$(GO) build -o bin/ferry-hub ./cmd/hub
	$(GO) build -o bin/ferry-agent ./cmd/agent
	$(GO) build -o bin/kubectl-ferry ./cmd/kubectl-ferry
	$(GO) build -o bin/ferry-local ./hack/local

.PHONY: images
images: ## build the ferry-hub and ferry-agent images without Docker into bin/images (docker archives, OCI layout); print sizes and digests
	$(GO) run ./hack/image --out bin/images

.PHONY: control-plane
control-plane: ## build etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok into bin/control-plane (cached by pinned version)
	hack/tools/build-control-plane.sh

.PHONY: node
node: ## build the real node of the local clusters (kubelet, kube-proxy, pause) into bin/node (cached by pinned version; a few minutes cold, less after make control-plane)
	hack/tools/build-node.sh

.PHONY: ocm-peers
ocm-peers: ## build OCM's own agents (work, registration, klusterlet operator, gRPC server), test peers of Ferry, into bin/ocm-peers (cached by pinned version; about 10 min cold)
	hack/tools/build-ocm-peers.sh

.PHONY: manifests
manifests: ## vendor the OCM CRDs into manifests/ocm; generate the OAM CRDs (manifests/oam) and deepcopy with controller-gen; copy the CRDs into deploy/
	hack/vendor-ocm-crds.sh
	hack/generate-oam.sh
	deploy/sync-crds.sh

.PHONY: verify
verify: ## gofmt, go vet, the vendored CRDs match the pinned modules, the generated OAM code matches its types, deploy/'s CRD copies match
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './bin/*' -not -path './.local/*')); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	CGO_ENABLED=0 $(GO) vet -trimpath ./... # the settings of gobuild and the images: their compiled packages are shared
	hack/vendor-ocm-crds.sh >/dev/null
	@git diff --exit-code --stat -- manifests/ocm || { echo "manifests/ocm is out of date: run make manifests and commit"; exit 1; }
	hack/generate-oam.sh --verify
	deploy/sync-crds.sh --verify

# The real-node tests (test/node) need root and containerd; where they cannot run they pass without running
# (unless FERRY_REQUIRE_REAL_NODE=1, as in CI, makes that a failure) and leave their reason in
# FERRY_REAL_NODE_NOT_RUN_FILE, printed last, also after a failure, so that nobody mistakes the run for a
# complete one.
real_node_report = if [ -s $(FERRY_REAL_NODE_NOT_RUN_FILE) ]; then \
  echo; echo '!!!!!!!!'; echo "!!! $$(cat $(FERRY_REAL_NODE_NOT_RUN_FILE))"; echo '!!!!!!!!'; fi

# What the tests run beside Ferry, built side by side: cold, each build spends minutes downloading modules
# and linking on one core, time the others' compiles fill. The real node comes after the control plane,
# not beside it: both are Kubernetes 1.35.4, and the node's build reuses the packages the control plane's
# compiled (Go's build cache shares nothing between two builds running at once).
.PHONY: test-binaries
test-binaries: ## build the control plane then the real node, OCM's test peers and controller-gen side by side (each cached by pinned version)
	$(MAKE) --no-print-directory -j3 --output-sync=target kubernetes-binaries ocm-peers controller-gen

.PHONY: kubernetes-binaries
kubernetes-binaries: control-plane
	$(MAKE) --no-print-directory node

.PHONY: controller-gen
controller-gen: ## build controller-gen into bin/tools (cached by pinned version)
	hack/tools/build-controller-gen.sh

.PHONY: test
test: test-binaries verify ## build the control plane, OCM's test peers and the real node if needed, verify, run every test against real API servers (pods on a real node as root), and fuzz briefly
	@rm -f $(FERRY_REAL_NODE_NOT_RUN_FILE)
	$(GO) test -count=1 -race -timeout 30m ./... || { $(real_node_report); exit 1; }
	$(MAKE) --no-print-directory fuzz || { $(real_node_report); exit 1; }
	@$(real_node_report)

# A count of executions, not a duration: with a duration, Go 1.26's fuzz coordinator may report its own
# deadline as a failure ("context deadline exceeded", no failing input) on a loaded machine
# (golang/go#75804, fixed in Go 1.27); CI failed so once.
FUZZTIME ?= 5000x
.PHONY: fuzz
fuzz: ## fuzz manifest decoding and the apply engine's input checks for FUZZTIME each (5000x executions, seconds; longer: make fuzz FUZZTIME=200000x)
	$(GO) test -run '^$$' -fuzz '^FuzzNormalize$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 100x ./pkg/workload/
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 100x ./pkg/workload/

.PHONY: bench
bench: control-plane ocm-peers ## run the benchmarks: the apply engine, feedback, the rollout decision at 10,000 clusters, the agent end to end on a real hub + spoke (busy, idle, its memory as shipped, how soon it puts back an edit), the agent over kube, gRPC and MQTT beside OCM's (7 minutes), the hub with two spokes, kubectl ferry get works over 10,000 ManifestWorks
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/apply/ ./pkg/agent/feedback/ ./pkg/rollout/
	$(GO) test -run '^$$' -bench 'Agent200|AgentIdle|PlainClient' -benchtime=1x ./pkg/agent/
	$(GO) test -run '^$$' -bench 'ShippedAgentMemory' -benchtime=1x ./test/e2e/
	$(GO) test -run '^$$' -bench 'Transports' -benchtime=1x -timeout 30m ./test/e2e/
	$(GO) test -run '^$$' -bench 'CreateToApplied|SpokeChangeToHub' -benchtime=100x ./pkg/agent/
	$(GO) test -run '^$$' -bench 'DriftRevert' -benchtime=20x ./pkg/agent/
	$(GO) test -run '^$$' -bench 'Hub100' -benchtime=1x ./pkg/hub/
	$(GO) test -run '^$$' -bench 'GetWorks10000' -benchtime=1x ./cmd/kubectl-ferry/

# The fleet benchmark: FLEET_CLUSTERS simulated clusters × FLEET_APPCONFIGS AppConfigs, agents' status
# writes at FLEET_STATUS_RATE a second, then (FLEET_ROLLOUT=true) a progressive rollout failed in its
# second stage and rolled back (about 9 of the 42 minutes at 10,000 clusters on a 2-core machine, 2 at
# 1,000; FLEET_ROLLOUT=false leaves it out); FLEET_CPU_LOAD=0.5 keeps half a core busy beside the hub for
# the run (a busier machine, the same on every machine); more flags of hack/bench-fleet in FLEET_ARGS
# (e.g. FLEET_ARGS='--hub-arg=--workers=20 --lag-writes=500').
FLEET_CLUSTERS    ?= 10000
FLEET_APPCONFIGS  ?= 10
FLEET_STATUS_RATE ?= 100
FLEET_ROLLOUT     ?= true
FLEET_CPU_LOAD    ?= 0
FLEET_ARGS        ?=
# A size sweep, to compare fleet sizes: FLEET_SWEEP=500,1000,2000,5000 runs the benchmark at each of these
# sizes in place of FLEET_CLUSTERS, all the sizes FLEET_SWEEP_RUNS times over, one run after another, each
# in a fresh hub; each run's JSON goes to .local/bench-fleet-<clusters>-<run>.json (its ferry-hub log
# beside it), then `bin/bench-fleet sweep-table` prints one table of them: the summary lag (p99, median)
# of the degrade and heal phases, hub writes and status writes/s reached in each, and whether the p99 was
# under 5s in both. The rollout is left out of a sweep unless FLEET_ROLLOUT=true is given. A run that
# fails fails the target, after the table of every run.
FLEET_SWEEP       ?=
FLEET_SWEEP_RUNS  ?= 2
# FLEET_ROLLOUT as given, false when it is only the default above.
FLEET_SWEEP_ROLLOUT := $(if $(filter file,$(origin FLEET_ROLLOUT)),false,$(FLEET_ROLLOUT))
comma := ,

.PHONY: bench-fleet
bench-fleet: control-plane build ## ferry-hub against a simulated fleet (FLEET_CLUSTERS × FLEET_APPCONFIGS, status at FLEET_STATUS_RATE/s): a table, and JSON in .local/bench-fleet.json; FLEET_SWEEP=500,1000,...: one table over sizes
	$(GO) build -o bin/bench-fleet ./hack/bench-fleet
ifeq ($(FLEET_SWEEP),)
	bin/bench-fleet --clusters $(FLEET_CLUSTERS) --appconfigs $(FLEET_APPCONFIGS) --status-rate $(FLEET_STATUS_RATE) --rollout=$(FLEET_ROLLOUT) --cpu-load $(FLEET_CPU_LOAD) \
	  --hub-binary bin/ferry-hub --json $(LOCAL_DIR)/bench-fleet.json --hub-log $(LOCAL_DIR)/bench-fleet-hub.log $(FLEET_ARGS)
else
	@# Ctrl-C stops the run under way (bench-fleet stops what it started) and the sweep; the table follows.
	@failed=0; stop=; files=(); trap 'stop=1' INT TERM; \
	for run in $$(seq 1 $(FLEET_SWEEP_RUNS)); do \
	  for n in $(subst $(comma), ,$(FLEET_SWEEP)); do \
	    [ -z "$$stop" ] || break 2; \
	    run_name=$(LOCAL_DIR)/bench-fleet-$$n-$$run; files+=("$$run_name.json"); rm -f "$$run_name.json"; \
	    echo; echo "# bench-fleet sweep: $$n clusters, run $$run of $(FLEET_SWEEP_RUNS)"; \
	    bin/bench-fleet --clusters $$n --appconfigs $(FLEET_APPCONFIGS) --status-rate $(FLEET_STATUS_RATE) --rollout=$(FLEET_SWEEP_ROLLOUT) --cpu-load $(FLEET_CPU_LOAD) \
	      --hub-binary bin/ferry-hub --json "$$run_name.json" --hub-log "$$run_name-hub.log" $(FLEET_ARGS) || failed=1; \
	  done; \
	done; \
	bin/bench-fleet sweep-table "$${files[@]}" && [ "$$failed$$stop" = 0 ]
endif

# More flags of `ferry-local up` for local-up and demo (demo-node sets --real-node).
LOCAL_UP_ARGS ?=

.PHONY: local-up
local-up: control-plane build ## start a local hub + spokes (cluster1, cluster2), each with ferry-agent, in the background
	bin/ferry-local up --state-dir $(LOCAL_DIR) $(LOCAL_UP_ARGS)

.PHONY: local-down
local-down: ## stop the local hub + spokes
	$(GO) build -o bin/ferry-local ./hack/local
	bin/ferry-local down --state-dir $(LOCAL_DIR)

# DEMO_WAIT_HEALTHY=1: make demo waits, with `kubectl ferry ... --until-healthy`, until every manifest is
# healthy (its Deployments ready); 0: only until every object exists (Available), for spokes whose pods
# cannot run.
DEMO_WAIT_HEALTHY ?= 1
KUBECTL_FERRY     := bin/kubectl-ferry --kubeconfig $(LOCAL_DIR)/hub.kubeconfig
CLUSTERSET_LABEL  := cluster.open-cluster-management.io/clusterset

.PHONY: demo
demo: local-up ## the main job: local hub + spokes, a ManifestWork and an OAM application delivered to both spokes, their status, a rollout over them
	@for c in $$(cut -d' ' -f1 $(LOCAL_DIR)/clusters | grep -v '^hub$$'); do \
	  echo "# hub: kubectl -n $$c apply -f examples/hello-work.yaml"; \
	  $(KUBECTL) --kubeconfig $(LOCAL_DIR)/hub.kubeconfig -n $$c apply -f examples/hello-work.yaml || exit 1; \
	done
	@for c in $$(cut -d' ' -f1 $(LOCAL_DIR)/clusters | grep -v '^hub$$'); do \
	  $(KUBECTL) --kubeconfig $(LOCAL_DIR)/hub.kubeconfig -n $$c wait manifestwork/hello --for=condition=Available --timeout=60s >/dev/null || exit 1; \
	  if [ "$(DEMO_WAIT_HEALTHY)" = 1 ]; then \
	    $(KUBECTL_FERRY) status work hello -n $$c --until-healthy --timeout 2m >/dev/null || exit 1; \
	  fi; \
	  echo; echo "# hub: kubectl ferry status work hello -n $$c   (what ferry-agent reports for cluster $$c)"; \
	  $(KUBECTL_FERRY) status work hello -n $$c || exit 1; \
	  echo; echo "# $$c: kubectl -n hello get configmaps,deployments,services"; \
	  $(KUBECTL) --kubeconfig $(LOCAL_DIR)/$$c.kubeconfig -n hello get configmaps,deployments,services || exit 1; \
	done
	@echo; echo "# hub: kubectl get managedclustersets; kubectl get managedclusters -L $(CLUSTERSET_LABEL); kubectl -n default get managedclustersetbindings"; \
	  echo "#      (an AppConfig reaches only the clusters of the sets bound to its namespace: local-up bound set default to namespace default)"
	@$(KUBECTL) --kubeconfig $(LOCAL_DIR)/hub.kubeconfig get managedclustersets
	@$(KUBECTL) --kubeconfig $(LOCAL_DIR)/hub.kubeconfig get managedclusters -L $(CLUSTERSET_LABEL)
	@$(KUBECTL) --kubeconfig $(LOCAL_DIR)/hub.kubeconfig -n default get managedclustersetbindings
	@echo; echo "# hub: kubectl apply -f examples/hello-app.yaml   (an OAM application placed on cluster1 and cluster2)"
	@$(KUBECTL) --kubeconfig $(LOCAL_DIR)/hub.kubeconfig apply -f examples/hello-app.yaml
	@# kubectl ferry reads the works; the AppConfig's own summary follows them within ferry-hub's
	@# --report-batch (500ms): wait for both, so that kubectl get below shows what kubectl ferry does.
	@if [ "$(DEMO_WAIT_HEALTHY)" = 1 ]; then \
	  $(KUBECTL_FERRY) status appconfig hello-app -n default --watch --until-healthy --timeout 2m >/dev/null && \
	  $(KUBECTL) --kubeconfig $(LOCAL_DIR)/hub.kubeconfig -n default wait appconfig/hello-app --for=jsonpath='{.status.summary.healthy}'=2/2 --timeout=60s >/dev/null; \
	else \
	  $(KUBECTL) --kubeconfig $(LOCAL_DIR)/hub.kubeconfig -n default wait appconfig/hello-app --for=jsonpath='{.status.summary.available}'=2/2 --timeout=60s >/dev/null; \
	fi
	@echo; echo "# hub: kubectl get components,applicationconfigurations"
	@$(KUBECTL) --kubeconfig $(LOCAL_DIR)/hub.kubeconfig -n default get components,applicationconfigurations
	@echo; echo "# hub: kubectl ferry status appconfig hello-app -n default"
	@$(KUBECTL_FERRY) status appconfig hello-app -n default
	@echo; echo "# hub: kubectl ferry render appconfig hello-app -n default --cluster cluster2   (what cluster2 gets: the override bigger-cluster2 applied)"
	@$(KUBECTL_FERRY) render appconfig hello-app -n default --cluster cluster2
	@for c in $$(cut -d' ' -f1 $(LOCAL_DIR)/clusters | grep -v '^hub$$'); do \
	  echo; echo "# $$c: kubectl -n default get deployments -L app.oam.dev/name,app.oam.dev/revision"; \
	  $(KUBECTL) --kubeconfig $(LOCAL_DIR)/$$c.kubeconfig -n default get deployments -L app.oam.dev/name,app.oam.dev/revision || exit 1; \
	done
	@# The rollout act: a change reaches cluster1 (the canary stage), and cluster2 only once cluster1 has
	@# been healthy with it for 10s. It is gated on health, so it needs pods that run (DEMO_WAIT_HEALTHY=1).
	@if [ "$(DEMO_WAIT_HEALTHY)" = 1 ]; then \
	  echo; echo "# hub: kubectl apply -f examples/rollout-app.yaml   (an application rolled out stage by stage: cluster1, then cluster2)"; \
	  $(KUBECTL) --kubeconfig $(LOCAL_DIR)/hub.kubeconfig apply -f examples/rollout-app.yaml || exit 1; \
	  $(KUBECTL_FERRY) rollout status rollout-app -n default --watch --timeout 3m >/dev/null || exit 1; \
	  echo; echo "# hub: a new image for rollout-app (kubectl patch appconfig rollout-app ...), then kubectl ferry rollout status rollout-app -n default --watch"; \
	  $(KUBECTL) --kubeconfig $(LOCAL_DIR)/hub.kubeconfig -n default patch appconfig rollout-app --type json \
	    -p '[{"op":"replace","path":"/spec/components/0/parameterValues/0/value","value":"nginx:1.27.2"}]' >/dev/null || exit 1; \
	  $(KUBECTL_FERRY) rollout status rollout-app -n default --watch --timeout 3m || exit 1; \
	  echo; echo "# hub: kubectl ferry rollout history rollout-app -n default"; \
	  $(KUBECTL_FERRY) rollout history rollout-app -n default || exit 1; \
	fi

# The node act of demo-node: the hub's own cluster, local-cluster, where ferry-hub and ferry-agent run as
# pods of deploy/ on a real node.
.PHONY: demo-node
demo-node: node images ## make demo with the hub on a real node (root; see test/node): ferry-hub and the hub's own agent installed from deploy/ as pods, a work run there as a real container
	@if [ -f $(LOCAL_DIR)/clusters ] && ! $(KUBECTL) --kubeconfig $(LOCAL_DIR)/hub.kubeconfig get managedcluster local-cluster >/dev/null 2>&1; then \
	  echo "local clusters without a real node are running: make local-down first" >&2; exit 1; \
	fi
	$(MAKE) demo LOCAL_UP_ARGS='--real-node --images bin/images'
	@echo; echo "# hub: kubectl get managedclusters   (local-cluster is the hub itself, its agent a pod)"
	@$(KUBECTL) --kubeconfig $(LOCAL_DIR)/hub.kubeconfig get managedclusters
	@echo; echo "# hub: kubectl -n local-cluster apply -f examples/node-work.yaml"
	@$(KUBECTL) --kubeconfig $(LOCAL_DIR)/hub.kubeconfig -n local-cluster apply -f examples/node-work.yaml
	@$(KUBECTL_FERRY) status work node-hello -n local-cluster --until-healthy --timeout 2m >/dev/null
	@echo; echo "# hub: kubectl ferry status work node-hello -n local-cluster"
	@$(KUBECTL_FERRY) status work node-hello -n local-cluster
	@echo; echo "# hub: kubectl get pods -n ferry-system -o wide   (ferry-hub, from deploy/hub)"
	@$(KUBECTL) --kubeconfig $(LOCAL_DIR)/hub.kubeconfig -n ferry-system get pods -o wide
	@echo; echo "# hub: kubectl get pods -n ferry-agent -o wide   (local-cluster's ferry-agent, from deploy/agent/spoke)"
	@$(KUBECTL) --kubeconfig $(LOCAL_DIR)/hub.kubeconfig -n ferry-agent get pods -o wide
	@echo; echo "# hub: kubectl get pods -n node-hello -o wide   (the work's Deployment, a real container)"
	@$(KUBECTL) --kubeconfig $(LOCAL_DIR)/hub.kubeconfig -n node-hello get pods -o wide

.PHONY: clean
clean: local-down ## stop the local clusters and remove bin/ (the control plane rebuilds on the next make test)
	rm -rf bin $(LOCAL_DIR)
