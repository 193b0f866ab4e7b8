// Package node holds the tests that run pods on a real node: a local cluster (internal/testing/localcluster)
// whose node is a kubelet with containerd, runc and CNI plugins, and kube-proxy, on this machine. They
// need root and Debian's containerd, runc, containernetworking-plugins, iptables and conntrack. On a
// machine without them the package runs no test and says so: it fails if FERRY_REQUIRE_REAL_NODE=1 (CI
// sets it), and otherwise writes the reason to FERRY_REAL_NODE_NOT_RUN_FILE, which `make test` prints
// at its end.
//
// The probe directory is the program the pods run.
package node
