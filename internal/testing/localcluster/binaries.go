package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// BinaryDirEnv names the environment variable that points at the directory holding etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok. The Makefile sets it; without it
// the binaries are looked for in bin/control-plane/current of the enclosing Ferry checkout.
const BinaryDirEnv = "FERRY_CONTROL_PLANE_DIR"

var controlPlaneBinaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}

// FindBinaryDir returns the directory holding the control-plane binaries, or an error saying how to
// build them.
func FindBinaryDir() (string, error) {
	dir := os.Getenv(BinaryDirEnv)
	if dir == "" {
		root, err := checkoutRoot()
		if err != nil {
			return "", fmt.Errorf("find control-plane binaries: %w; set %s or run `make control-plane` in a Ferry checkout", err, BinaryDirEnv)
		}
		dir = filepath.Join(root, "bin", "control-plane", "current")
	}
	for _, name := range controlPlaneBinaries {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("control-plane binary %s not found in %s: build it with `make control-plane`", name, dir)
		}
	}
	return filepath.Abs(dir)
}

// NodeBinaryDirEnv names the environment variable that points at the directory holding the real
// node's kubelet, kube-proxy and pause. The Makefile sets it; without it they are looked for in
// bin/node/current of the enclosing Ferry checkout.
const NodeBinaryDirEnv = "FERRY_NODE_DIR"

var nodeBinaries = []string{"kubelet", "kube-proxy", "pause"}

// FindNodeBinaryDir returns the directory holding the real node's binaries, or an error saying how to
// build them.
func FindNodeBinaryDir() (string, error) {
	dir := os.Getenv(NodeBinaryDirEnv)
	if dir == "" {
		root, err := checkoutRoot()
		if err != nil {
			return "", fmt.Errorf("find the real node's binaries: %w; set %s or run `make node` in a Ferry checkout", err, NodeBinaryDirEnv)
		}
		dir = filepath.Join(root, "bin", "node", "current")
	}
	for _, name := range nodeBinaries {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("real-node binary %s not found in %s: build it with `make node`", name, dir)
		}
	}
	return filepath.Abs(dir)
}

// checkoutRoot walks up from the working directory to the directory holding hack/tools/go.mod, which
// only a Ferry checkout has.
func checkoutRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "tools", "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside a Ferry checkout")
		}
		dir = parent
	}
}
