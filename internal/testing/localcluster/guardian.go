package localcluster

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

// envtest starts etcd and kube-apiserver in process groups of their own, so they survive the death of
// the process that started them: a failed `go test` timeout, Ctrl-C or SIGKILL would leave them running
// with their temporary directories. The guardian closes that gap. It is the owner's own executable,
// re-run with guardianEnv set, connected to the owner by a pipe on its standard input. The owner writes
// "guard <dir>" before it starts anything under dir and "release <dir>" once it has stopped it. When
// the pipe closes — the owner exited, however it exited — the guardian kills every process whose command
// line names a path in a still-guarded directory and removes the directory.
const guardianEnv = "FERRY_LOCALCLUSTER_GUARDIAN"

func init() {
	if os.Getenv(guardianEnv) == "1" {
		os.Exit(runGuardian(os.Stdin, os.Stderr))
	}
}

type guardianClient struct {
	mu  sync.Mutex
	w   *os.File // the owner's end of the pipe; kept open for the owner's lifetime
	err error
}

var guardian guardianClient

// guard tells the guardian to clean up dir if this process dies before release(dir).
func guard(dir string) error {
	g := &guardian
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.w == nil && g.err == nil {
		g.w, g.err = startGuardian()
	}
	if g.err != nil {
		return fmt.Errorf("start guardian: %w", g.err)
	}
	if _, err := fmt.Fprintf(g.w, "guard %s\n", dir); err != nil {
		return fmt.Errorf("guard %s: %w", dir, err)
	}
	return nil
}

// release tells the guardian that dir has been cleaned up by its owner.
func release(dir string) {
	g := &guardian
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.w != nil {
		// A failed write means the guardian is gone; nothing is left to tell.
		_, _ = fmt.Fprintf(g.w, "release %s\n", dir)
	}
}

func startGuardian() (*os.File, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), guardianEnv+"=1")
	cmd.Stdin = r
	// Its own process group, so that a Ctrl-C aimed at the owner does not take the guardian with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, err
	}
	go func() { _ = cmd.Wait() }() // reap it should it exit before the owner
	return w, nil
}

// runGuardian is the guardian's main loop.
func runGuardian(in io.Reader, log io.Writer) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	guarded := map[string]bool{}
	scanner := bufio.NewScanner(in)
	for scanner.Scan() {
		verb, dir, ok := strings.Cut(scanner.Text(), " ")
		if !ok {
			continue
		}
		switch verb {
		case "guard":
			guarded[dir] = true
		case "release":
			delete(guarded, dir)
		}
	}
	// The owner is gone: whatever it still guarded was not stopped.
	code := 0
	for dir := range guarded {
		if err := killAndRemove(dir, 30*time.Second); err != nil {
			fmt.Fprintf(log, "localcluster guardian: %v\n", err)
			code = 1
		}
	}
	return code
}

// killAndRemove kills every process running under dir and their descendants, waits for them to be
// gone, cleans up what a real node under dir leaves on the machine, and removes dir.
//
// The descendants are a real node's containers: their processes name no path of dir, but they are
// children of containerd's shims, which do.
func killAndRemove(dir string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		procs, err := processesUnder(dir)
		if err == nil {
			procs, err = withDescendants(procs)
		}
		if err != nil {
			return fmt.Errorf("list processes under %s: %w", dir, err)
		}
		if len(procs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes under %s still running after %s: %v", dir, timeout, procs)
		}
		for _, p := range procs {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if hasRealNode(dir) {
		if err := cleanupRealNodeHost(dir); err != nil {
			return fmt.Errorf("clean up the real node of %s: %w", dir, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}
