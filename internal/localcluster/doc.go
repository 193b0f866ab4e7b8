// Package localcluster runs a local multicluster control plane for tests and for a person's sandbox: one
// hub and any number of spokes, each with its own etcd and kube-apiserver (and, where asked,
// kube-controller-manager), started in parallel from the binaries `make control-plane` builds. A spoke
// with kube-controller-manager also runs kube-scheduler and kwok with a few simulated nodes, so that its
// pods are scheduled and run as on a real cluster. It installs the CRDs each side serves, writes an admin
// kubeconfig per cluster, and stops everything it started — also when its owner dies without stopping
// it, through a guardian process that outlives the owner.
package localcluster
