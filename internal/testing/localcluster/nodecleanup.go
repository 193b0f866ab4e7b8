package localcluster

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// What a real node leaves on the machine once its processes are gone, and how it is removed. The same
// clean-up runs when the environment stops and when the guardian finds an owner dead, so it works from
// the directory alone: the mounts under it, and the machine-wide traces every real node leaves (there is
// only ever one at a time, see lockRealNode) — iptables chains, the pods' bridge, the pods' cgroups.

// hasRealNode reports whether dir, an environment's directory, holds a cluster with a real node.
func hasRealNode(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "*", "node", "containerd"))
	return len(m) > 0
}

// cleanupRealNodeHost removes what a stopped real node leaves outside its processes. Processes must be
// gone: a live containerd or kubelet would re-create what this removes.
func cleanupRealNodeHost(dir string) error {
	errs := []error{unmountUnder(dir)}
	for _, tool := range []string{"iptables", "ip6tables"} {
		if err := removeNodeChains(tool); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", tool, err))
		}
	}
	if out, err := exec.Command("ip", "link", "delete", podBridge).CombinedOutput(); err != nil && !strings.Contains(string(out), "Cannot find device") {
		errs = append(errs, fmt.Errorf("delete the pods' bridge %s: %w: %s", podBridge, err, strings.TrimSpace(string(out))))
	}
	errs = append(errs, removePodCgroups(), removeFixedPathLeftovers(dir))
	return errors.Join(errs...)
}

// fixedPathLeftovers are the few places outside the cluster's directory that the kubelet, containerd's
// shims and the CNI library write to whatever they are told: the kubelet's device-plugin socket, the
// shims' sockets, the CNI results cache, the containers' log links. A clean stop leaves only the
// directories; a node killed with its pods running leaves files in them too. Directories are removed only if
// empty, so that a machine's own use of them is left alone.
var fixedPathLeftovers = struct{ files, emptyDirs []string }{
	files:     []string{"/var/lib/kubelet/device-plugins/kubelet.sock"},
	emptyDirs: []string{"/var/lib/kubelet/device-plugins", "/var/lib/kubelet", "/run/containerd/s", "/run/containerd", "/var/lib/cni/results", "/var/lib/cni", "/var/log/containers"},
}

func removeFixedPathLeftovers(dir string) error {
	var errs []error
	// The kubelet links each container's log in the cluster's directory from /var/log/containers.
	links, _ := filepath.Glob("/var/log/containers/*.log")
	for _, l := range links {
		if target, err := os.Readlink(l); err == nil && strings.HasPrefix(target, filepath.Clean(dir)+"/") {
			errs = append(errs, ignoreNotExist(os.Remove(l)))
		}
	}
	// containerd records each shim's socket, which the shim makes in /run/containerd/s whatever
	// containerd's state directory, in an address file of the task's bundle.
	addressFiles, _ := filepath.Glob(filepath.Join(dir, "*", "node", "containerd", "state", "io.containerd.runtime.v2.task", "*", "*", "address"))
	for _, f := range addressFiles {
		if addr, err := os.ReadFile(f); err == nil {
			errs = append(errs, ignoreNotExist(os.Remove(strings.TrimPrefix(strings.TrimSpace(string(addr)), "unix://"))))
		}
	}
	for _, r := range ownedCNIResults(cniResultsDir, dir) {
		errs = append(errs, ignoreNotExist(os.Remove(r)))
	}
	for _, f := range fixedPathLeftovers.files {
		errs = append(errs, ignoreNotExist(os.Remove(f)))
	}
	for _, d := range fixedPathLeftovers.emptyDirs {
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// cniResultsDir is where the CNI library caches each attachment's result, whatever containerd's state
// directory.
const cniResultsDir = "/var/lib/cni/results"

// ownedCNIResults are the cached CNI results in resultsDir of the pods of the cluster in dir: those of the
// pods' network, and any other (the loopback's) whose interface lives in a network namespace under dir —
// containerd keeps them in its state directory. A sandbox whose set-up failed halfway leaves a loopback
// result without a bridge one, so they are not matched by pairs.
func ownedCNIResults(resultsDir, dir string) []string {
	entries, _ := os.ReadDir(resultsDir)
	prefix := filepath.Clean(dir) + "/"
	var owned []string
	for _, e := range entries {
		path := filepath.Join(resultsDir, e.Name())
		if strings.HasPrefix(e.Name(), podNetwork+"-") {
			owned = append(owned, path)
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var cached struct {
			Result struct {
				Interfaces []struct {
					Sandbox string `json:"sandbox"`
				} `json:"interfaces"`
			} `json:"result"`
		}
		if json.Unmarshal(data, &cached) != nil {
			continue
		}
		for _, i := range cached.Result.Interfaces {
			if strings.HasPrefix(i.Sandbox, prefix) {
				owned = append(owned, path)
				break
			}
		}
	}
	return owned
}

func ignoreNotExist(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// unmountUnder detaches every mount whose mount point is dir or inside it, deepest first: the kubelet's
// bind mount of its root directory (which it makes rshared) and the pods' volumes in it, containerd's
// container root filesystems, sandbox /dev/shm and network namespaces.
func unmountUnder(dir string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	prefix := filepath.Clean(dir)
	var points []string
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for scanner.Scan() {
		// The fifth field is the mount point, with spaces and the like octal-escaped (\040).
		fields := strings.Fields(scanner.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountPoint(fields[4])
		if mp == prefix || strings.HasPrefix(mp, prefix+"/") {
			points = append(points, mp)
		}
	}
	// Deepest first; a path mounted twice (a bind mount on itself) is detached twice.
	slices.SortStableFunc(points, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, mp := range points {
		if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", mp, err))
		}
	}
	return errors.Join(errs...)
}

func unescapeMountPoint(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeNodeChains removes, in every table, the chains of kube-proxy and the kubelet (KUBE-*) and the
// per-pod chains of the bridge plugin's masquerading for the node's network (CNI-*, found by the
// comment naming the network), with every rule that jumps to them. The pods' teardown removes the
// CNI chains itself; they remain only when containerd was killed with its pods running.
func removeNodeChains(tool string) error {
	for _, table := range []string{"filter", "nat", "mangle"} {
		out, err := exec.Command(tool+"-save", "-t", table).Output()
		if err != nil {
			return fmt.Errorf("%s-save -t %s: %w", tool, table, err)
		}
		script := nodeChainsRemoval(string(out))
		if script == "" {
			continue
		}
		cmd := exec.Command(tool+"-restore", "--noflush")
		cmd.Stdin = strings.NewReader("*" + table + "\n" + script + "COMMIT\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s-restore (table %s): %w: %s", tool, table, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// nodeChainsRemoval is the iptables-restore input that removes the node's chains from one table, given
// that table as iptables-save prints it; "" if there is nothing to remove.
func nodeChainsRemoval(saved string) string {
	networkComment := `name: \"` + podNetwork + `\"`
	ours := map[string]bool{}
	var rules []string
	for _, line := range strings.Split(saved, "\n") {
		switch {
		case strings.HasPrefix(line, ":KUBE-"):
			ours[strings.Fields(line[1:])[0]] = true
		case strings.HasPrefix(line, "-A "):
			rules = append(rules, line)
		}
	}
	// The bridge plugin's chains for the network: those its commented rules jump to.
	for _, r := range rules {
		if strings.Contains(r, networkComment) {
			if target := jumpTarget(r); strings.HasPrefix(target, "CNI-") && !strings.HasPrefix(target, "CNI-HOSTPORT-") {
				ours[target] = true
			}
		}
	}
	var b strings.Builder
	for _, r := range rules {
		chain := strings.Fields(r)[1]
		if !ours[chain] && (ours[jumpTarget(r)] || strings.Contains(r, networkComment)) {
			b.WriteString("-D" + strings.TrimPrefix(r, "-A") + "\n")
		}
	}
	chains := make([]string, 0, len(ours))
	for c := range ours {
		chains = append(chains, c)
	}
	slices.Sort(chains)
	// Flushed all first, since our chains jump to one another; then deleted.
	for _, c := range chains {
		b.WriteString("-F " + c + "\n")
	}
	for _, c := range chains {
		b.WriteString("-X " + c + "\n")
	}
	return b.String()
}

// jumpTarget is the chain or target a saved rule jumps to (-j or -g), or "".
func jumpTarget(rule string) string {
	fields := strings.Fields(rule)
	for i, f := range fields {
		if (f == "-j" || f == "-g") && i+1 < len(fields) {
			return fields[i+1]
		}
	}
	return ""
}

// removePodCgroups removes the cgroups the kubelet made for pods (kubepods and its QoS and pod
// children, in every cgroup v1 hierarchy and in cgroup v2), deepest first. By now they are empty;
// the kubelet does not remove them on exit.
func removePodCgroups() error {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	if _, err := os.Stat("/sys/fs/cgroup/kubepods"); err == nil {
		roots = append(roots, "/sys/fs/cgroup/kubepods")
	}
	var errs []error
	for _, root := range roots {
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errs...)
}
