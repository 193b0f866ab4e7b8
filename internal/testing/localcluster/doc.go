// Package localcluster runs a local multicluster control plane for tests and for a person's sandbox: one
// hub and any number of spokes, each with its own etcd and kube-apiserver (and, where asked,
// kube-controller-manager), started in parallel from the binaries `make control-plane` builds. A spoke
// with kube-controller-manager also runs kube-scheduler and kwok with a few simulated nodes, so that its
// pods are scheduled and run as on a real cluster. It installs the CRDs each side serves, writes an admin
// kubeconfig per cluster, and stops everything it started — also when its owner dies without stopping
// it, through a guardian process that outlives the owner.
//
// One cluster may instead have a real node (ClusterSpec.RealNode): kubelet and kube-proxy from `make
// node`, with Debian's containerd (a child process with its own configuration, state and socket in the
// cluster's directory), runc and CNI plugins, so that pods run as containers of images imported with
// RealNode.ImportImage (WriteImageArchive and WriteImage pack static binaries as one); nothing is ever pulled. It
// needs root (RealNodeUnavailable says what is missing) and is the machine's only one while it runs.
// Its API server keeps the ServiceAccount admission plugin and serves on an extra address of the
// loopback interface that pods reach through the `kubernetes` Service, and trusts the cluster's own
// authority for client certificates, with which kube-controller-manager signs what an approved CSR asks
// for (signer kubernetes.io/kube-apiserver-client: an OCM registration agent's credential). Stopping it — or the guardian,
// for an owner that died — also kills its containers, unmounts what the kubelet and containerd mounted
// in the cluster's directory, and removes the iptables chains and the pods' bridge the node made.
//
// Files: localcluster.go (Start, Options), cluster.go (one cluster), controllermanager.go, nodes.go
// (kwok's simulated nodes); realnode.go (the real node's start and stop), containerd.go, kubelet.go,
// kubeproxy.go, cni.go, nodecerts.go, nodehost.go (what the machine must have and give), nodecleanup.go,
// image.go; guardian.go and procs.go (finding and killing what a cluster runs).
package localcluster
