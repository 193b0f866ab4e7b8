package localcluster

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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
