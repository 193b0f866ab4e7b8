package e2e

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"
)

// buildBinary builds the command package pkg (relative to the checkout) into a directory of the test
// and returns the binary's path.
func buildBinary(t *testing.T, pkg, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	build := exec.Command("go", "build", "-o", bin, pkg)
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", name, err, out)
	}
	return bin
}

// readClusterRole reads a ClusterRole shipped in deploy/, so the binaries run with exactly the
// permissions an installation gives them.
func readClusterRole(t *testing.T, path string) *rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), path))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return role
}

// killableProcess is a ferry binary the test runs as a child process, kills with SIGKILL and starts
// again with the same arguments. Its output of every run is appended to one log.
type killableProcess struct {
	t       *testing.T
	name    string
	bin     string
	args    []string
	logPath string

	cmd    *exec.Cmd
	exited chan struct{}
	// starts counts the runs, the first included.
	starts int
}

// startKillable runs bin with args and stops it when the test ends; on failure the end of its log is
// printed.
func startKillable(t *testing.T, name, bin string, args ...string) *killableProcess {
	t.Helper()
	p := &killableProcess{t: t, name: name, bin: bin, args: args, logPath: filepath.Join(t.TempDir(), name+".log")}
	p.start()
	t.Cleanup(func() {
		if p.running() {
			p.kill()
		}
		if t.Failed() {
			if data, err := os.ReadFile(p.logPath); err == nil {
				t.Logf("%s (%d runs), end of its log:\n%s", p.name, p.starts, tail(string(data), 60))
			}
		}
	})
	return p
}

func (p *killableProcess) start() {
	p.t.Helper()
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		p.t.Fatal(err)
	}
	defer logf.Close()
	p.starts++
	// A marker between runs, so that the log shows which run said what.
	_, _ = logf.WriteString("==== " + p.name + " run " + strconv.Itoa(p.starts) + " ====\n")
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Dies with the test process, however that ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("start %s: %v", p.name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	p.cmd, p.exited = cmd, exited
}

// running reports whether the current run has not exited.
func (p *killableProcess) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits until the process is gone. A process that had already exited on its own
// fails the test: it crashed, which is not what this test provokes.
func (p *killableProcess) kill() {
	p.t.Helper()
	if !p.running() {
		p.t.Errorf("%s exited on its own before it was killed (run %d): %v", p.name, p.starts, p.cmd.ProcessState)
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.t.Fatalf("%s (pid %d) still running 30s after SIGKILL", p.name, p.cmd.Process.Pid)
	}
}

// killAndRestart kills the process with SIGKILL and starts it again with the same arguments.
func (p *killableProcess) killAndRestart() {
	p.t.Helper()
	p.kill()
	p.start()
}

// killSeed is the seed of the random kill points: FERRY_KILL_SEED when set, to replay a run, else the
// clock. It is logged either way.
func killSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FERRY_KILL_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("FERRY_KILL_SEED=%q: %v", s, err)
		}
	}
	t.Logf("kill points seeded with %d (replay with FERRY_KILL_SEED=%d)", seed, seed)
	return seed
}

// randomDelay is a duration in [0, upTo) drawn from rng: when, after a change starts, the process is
// killed. Waiting it out is the point of the test (the kill lands somewhere in the middle of the work),
// not a wait for a result.
func randomDelay(rng *rand.Rand, upTo time.Duration) time.Duration {
	return time.Duration(rng.Int64N(int64(upTo)))
}

// killDuring runs change (which writes to the hub) and, a random delay after it starts, kills the
// process with SIGKILL; once both are done it calls whileDown and starts the process again. It returns
// the delay.
func killDuring(t *testing.T, p *killableProcess, rng *rand.Rand, upTo time.Duration, change func(ctx context.Context) error, whileDown func()) time.Duration {
	t.Helper()
	delay := randomDelay(rng, upTo)
	done := make(chan error, 1)
	go func() { done <- change(t.Context()) }()
	timer := time.NewTimer(delay)
	defer timer.Stop()
	<-timer.C
	p.kill()
	if err := <-done; err != nil {
		t.Fatalf("change while %s was killed: %v", p.name, err)
	}
	whileDown()
	p.start()
	return delay
}

// converge polls check until it reports no problem, up to timeout. check returns the problems that
// may still resolve (not converged yet) and the violations that cannot (an object re-created, so its
// UID changed): a violation fails the test at once.
func converge(t *testing.T, what string, timeout time.Duration, p *killableProcess, check func(ctx context.Context) (problems, violations []string, err error)) {
	t.Helper()
	var last []string
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if !p.running() {
			t.Fatalf("%s: %s exited on its own (run %d): %v", what, p.name, p.starts, p.cmd.ProcessState)
		}
		problems, violations, err := check(ctx)
		if err != nil {
			last = []string{err.Error()} // an API error: try again
			return false, nil
		}
		if len(violations) > 0 {
			t.Fatalf("%s: %d violations:\n  %s", what, len(violations), joinFirst(violations, 20))
		}
		last = problems
		return len(problems) == 0, nil
	})
	if err != nil {
		t.Fatalf("%s: not converged within %s; %d problems left:\n  %s", what, timeout, len(last), joinFirst(last, 20))
	}
}

// joinFirst joins the first n lines, saying how many more there are.
func joinFirst(lines []string, n int) string {
	out := ""
	for i, l := range lines {
		if i == n {
			return out + "\n  ... and " + strconv.Itoa(len(lines)-n) + " more"
		}
		if i > 0 {
			out += "\n  "
		}
		out += l
	}
	return out
}
