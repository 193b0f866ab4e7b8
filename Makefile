# Ferry — common tasks. `make help` lists them.
SHELL := /usr/bin/env bash -o pipefail -c
GO    ?= go

# The test control plane built by hack/tools (etcd, kube-apiserver, kube-controller-manager).
export FERRY_CONTROL_PLANE_DIR := $(CURDIR)/bin/control-plane/current
# Where `make local-up` keeps kubeconfigs, its pid file and its log.
LOCAL_DIR ?= .local
KUBECTL   ?= kubectl

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: build
build: ## build ferry-hub, ferry-agent and ferry-local into bin/
	$(GO) build -o bin/ferry-hub ./cmd/hub
	$(GO) build -o bin/ferry-agent ./cmd/agent
	$(GO) build -o bin/ferry-local ./hack/local

.PHONY: control-plane
control-plane: ## build etcd, kube-apiserver, kube-controller-manager into bin/control-plane (cached by pinned version)
	hack/tools/build-control-plane.sh

.PHONY: manifests
manifests: ## vendor the OCM CRDs from the pinned OCM api module into manifests/ocm
	hack/vendor-ocm-crds.sh

.PHONY: verify
verify: ## gofmt, go vet, and the vendored CRDs match the pinned modules
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	hack/vendor-ocm-crds.sh >/dev/null
	@git diff --exit-code --stat -- manifests || { echo "manifests/ is out of date: run make manifests and commit"; exit 1; }

.PHONY: test
test: control-plane verify ## build the control plane if needed, verify, and run every test against real API servers
	$(GO) test -count=1 -race -timeout 30m ./...

.PHONY: bench
bench: control-plane ## run the benchmarks: the apply engine, feedback, and the agent end to end on a real hub + spoke
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/apply/ ./pkg/agent/feedback/
	$(GO) test -run '^$$' -bench . -benchtime=1x ./pkg/agent/

.PHONY: local-up
local-up: control-plane build ## start a local hub + spokes (cluster1, cluster2) in the background
	bin/ferry-local up --state-dir $(LOCAL_DIR)

.PHONY: local-down
local-down: ## stop the local hub + spokes
	$(GO) build -o bin/ferry-local ./hack/local
	bin/ferry-local down --state-dir $(LOCAL_DIR)

.PHONY: demo
demo: local-up ## bring up the local hub + spokes and show them with kubectl
	@for c in $$(cut -d' ' -f1 $(LOCAL_DIR)/clusters); do \
	  echo; echo "# $$c: $(KUBECTL) --kubeconfig $(LOCAL_DIR)/$$c.kubeconfig get namespaces,crds"; \
	  $(KUBECTL) --kubeconfig $(LOCAL_DIR)/$$c.kubeconfig get namespaces,crds || exit 1; \
	done
	@echo; echo "# hub: $(KUBECTL) --kubeconfig $(LOCAL_DIR)/hub.kubeconfig get managedclusters"
	@$(KUBECTL) --kubeconfig $(LOCAL_DIR)/hub.kubeconfig get managedclusters

.PHONY: clean
clean: local-down ## stop the local clusters and remove bin/ (the control plane rebuilds on the next make test)
	rm -rf bin $(LOCAL_DIR)
