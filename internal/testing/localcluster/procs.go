package localcluster

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is an operating-system process of a local cluster.
type Process struct {
	PID  int
	Name string // base name of the executable, e.g. "kube-apiserver"
}

// processesUnder lists the live processes whose command line names a path inside dir. Every process a
// local cluster starts takes its data, certificate or kubeconfig path inside the cluster's directory,
// so this finds them without keeping PIDs, also from another process such as the guardian.
func processesUnder(dir string) ([]Process, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	needle := []byte(filepath.Clean(dir) + string(filepath.Separator))
	self := os.Getpid()
	var out []Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, needle) || isZombie(pid) {
			continue // gone meanwhile, or not ours
		}
		argv0, _, _ := bytes.Cut(cmdline, []byte{0})
		out = append(out, Process{PID: pid, Name: filepath.Base(string(argv0))})
	}
	return out, nil
}

// withDescendants adds to procs every live process descended from one of them.
func withDescendants(procs []Process) ([]Process, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	children := map[int][]Process{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// After the parenthesised command name: the state (field 3), then the parent's pid (field 4).
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 2 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		ppid, err := strconv.Atoi(fields[1])
		if err != nil {
			continue
		}
		name := string(stat[bytes.IndexByte(stat, '(')+1 : i])
		children[ppid] = append(children[ppid], Process{PID: pid, Name: name})
	}
	seen := map[int]bool{}
	var out []Process
	queue := slices.Clone(procs)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p.PID] {
			continue
		}
		seen[p.PID] = true
		out = append(out, p)
		queue = append(queue, children[p.PID]...)
	}
	return out, nil
}

// ProcessAlive reports whether pid names a running process (not one that has exited and only waits
// to be reaped).
func ProcessAlive(pid int) bool {
	return syscall.Kill(pid, 0) == nil && !isZombie(pid)
}

// isZombie reports whether pid has exited and only waits to be reaped; such a process holds no
// resources and counts as gone.
func isZombie(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name, which may itself contain spaces or ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	return strings.ContainsRune("ZX", rune(stat[i+2]))
}

// CPUTime is the processor time (user and system) the cluster's processes have used so far, by
// process name ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok").
func (c *Cluster) CPUTime() (map[string]time.Duration, error) {
	procs, err := c.Processes()
	if err != nil {
		return nil, err
	}
	out := map[string]time.Duration{}
	for _, p := range procs {
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.PID), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// After the parenthesised command name come the fields from 3 (state) on; utime and stime are
		// fields 14 and 15, in clock ticks of 1/100 s (USER_HZ).
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
		if len(fields) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(fields[11], 10, 64)
		s, _ := strconv.ParseInt(fields[12], 10, 64)
		out[p.Name] += time.Duration(u+s) * 10 * time.Millisecond
	}
	return out, nil
}
