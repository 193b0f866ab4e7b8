package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// What a real node needs of the machine: root, Debian's containerd, runc, CNI plugins, iptables and
// conntrack, and iproute2. They are looked for where Debian installs them.
var (
	// nodeHostTools maps each program the node runs to the Debian package that installs it.
	nodeHostTools = []struct{ program, pkg string }{
		{"containerd", "containerd"},
		{"ctr", "containerd"},
		{"containerd-shim-runc-v2", "containerd"},
		{"runc", "runc"},
		{"iptables", "iptables"},
		{"conntrack", "conntrack"},
		{"ip", "iproute2"},
	}
	// cniBinDir holds the CNI plugins the node's network uses; cniPlugins are those plugins.
	cniBinDir  = "/usr/lib/cni"
	cniPlugins = []string{"bridge", "host-local", "portmap", "loopback"}
)

// RealNodeUnavailable says, in one line, why this machine cannot run a cluster with a real node (what
// to install, or that root is needed), or returns "" if it can. It does not look for the node's
// binaries: FindNodeBinaryDir says how to build those.
func RealNodeUnavailable() string {
	var missing []string
	add := func(pkg string) {
		if !slices.Contains(missing, pkg) {
			missing = append(missing, pkg)
		}
	}
	for _, t := range nodeHostTools {
		if _, err := exec.LookPath(t.program); err != nil {
			add(t.pkg)
		}
	}
	for _, p := range cniPlugins {
		if _, err := os.Stat(filepath.Join(cniBinDir, p)); err != nil {
			add("containernetworking-plugins")
		}
	}
	root := os.Geteuid() == 0
	switch {
	case len(missing) > 0 && !root:
		return "install " + strings.Join(missing, " ") + " and run as root"
	case len(missing) > 0:
		return "install " + strings.Join(missing, " ") + " (apt-get install -y " + strings.Join(missing, " ") + ")"
	case !root:
		return "run as root (kubelet and containerd need it)"
	}
	return ""
}

// nodeIP is the address of the real node and of its cluster's API server: an extra /32 on the loopback
// interface. Pods reach the API server through the `kubernetes` Service, whose endpoint cannot be a
// loopback address (127/8 is not routed from a pod's network namespace), and this machine has no
// dummy link type to put an address on.
var nodeIP = net.IPv4(10, 200, 0, 1)

// ensureNodeIP adds nodeIP to the loopback interface unless it is there already. It is left in place
// after the cluster stops: it is harmless, and another cluster may be about to use it.
func ensureNodeIP(ctx context.Context) error {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return fmt.Errorf("list addresses: %w", err)
	}
	for _, a := range addrs {
		if ipNet, ok := a.(*net.IPNet); ok && ipNet.IP.Equal(nodeIP) {
			return nil
		}
	}
	out, err := exec.CommandContext(ctx, "ip", "addr", "add", nodeIP.String()+"/32", "dev", "lo").CombinedOutput()
	// Another cluster starting at the same moment may have added it first.
	if err != nil && !strings.Contains(string(out), "File exists") {
		return fmt.Errorf("add %s to lo: %w: %s", nodeIP, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// enableIPForward turns on IPv4 forwarding, which the pods' bridge network needs to reach anything
// beyond the node. It is left on: a machine setting, like the one a kubelet host has.
func enableIPForward() error {
	return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644)
}

// realNodeLockFile serialises real nodes on a machine: a kubelet's port, the iptables chains of
// kubelet and kube-proxy and the pods' bridge are the machine's, so two real nodes would fight over
// them (two test packages run at once by `go test ./...`, say).
const realNodeLockFile = "/run/ferry-localcluster-real-node.lock"

// lockRealNode waits until no other real node runs on this machine and returns the lock's file, which
// must stay open while the node runs; closing it (or the process dying) lets the next one start.
func lockRealNode(ctx context.Context) (*os.File, error) {
	f, err := os.OpenFile(realNodeLockFile, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", realNodeLockFile, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", realNodeLockFile, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for another real node on this machine to stop (%s): %w", realNodeLockFile, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
