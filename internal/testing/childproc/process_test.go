package childproc

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// The test binary stands in for ferry-hub and ferry-agent: with CHILDPROC_TEST_CHILD set it runs as
// the child that variable names instead of running the tests.
func TestMain(m *testing.M) {
	switch os.Getenv("CHILDPROC_TEST_CHILD") {
	case "":
		os.Exit(m.Run())
	case "serve":
		serveReadyz(os.Getenv("CHILDPROC_TEST_ADDR"))
	case "ignore-sigterm":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ignoring SIGTERM")
		select {}
	case "exit":
		fmt.Println("unknown flag: --hub-kubeconfg-dir")
		os.Exit(1)
	}
}

// serveReadyz answers /readyz with 200 until SIGTERM, as the binaries' health servers do.
func serveReadyz(addr string) {
	fmt.Println("serving", addr, "pid", os.Getpid())
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: time.Second}
	go func() {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM)
		<-stop
		fmt.Println("stopping on SIGTERM")
		_ = srv.Close()
	}()
	_ = srv.ListenAndServe()
	os.Exit(0)
}

// child is a command that runs this test binary as the child kind.
func child(t *testing.T, kind string, env ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append([]string{"CHILDPROC_TEST_CHILD=" + kind}, env...)
	return cmd
}

func freeAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func start(t *testing.T, cmd *exec.Cmd, name string) *Process {
	t.Helper()
	p, err := Start(cmd, name, filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = StopAll([]*Process{p}, 5*time.Second) })
	return p
}

func readyWithin(t *testing.T, p *Process, addr string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	if err := p.WaitReady(ctx, addr); err != nil {
		t.Fatal(err)
	}
}

// A process killed with SIGKILL and started again is a new run of the same command, and its log
// keeps what every run said, each after a line naming the run: what the kill tests read after a
// failure. A kill is not the process exiting on its own.
func TestKillAndRestartRunTheSameCommandAgain(t *testing.T) {
	addr := freeAddress(t)
	p := start(t, child(t, "serve", "CHILDPROC_TEST_ADDR="+addr), "server")
	readyWithin(t, p, addr, 30*time.Second)
	first := p.PID()
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if p.Running() || p.ExitedOnItsOwn() {
		t.Fatalf("after Kill: running %t, exited on its own %t; want neither", p.Running(), p.ExitedOnItsOwn())
	}
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	readyWithin(t, p, addr, 30*time.Second)
	if p.PID() == first || p.Runs() != 2 {
		t.Errorf("after Restart: pid %d (first run %d), %d runs; want a new process and 2 runs", p.PID(), first, p.Runs())
	}
	if err := p.Restart(); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Errorf("Restart of a running process: %v, want an error saying it is still running", err)
	}
	log := p.LogTail(100)
	for _, want := range []string{"==== server, run 1 ====\nserving " + addr + " pid " + fmt.Sprint(first), "==== server, run 2 ====\nserving " + addr} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// A process that exits by itself (a flag deploy/ misspells) fails WaitReady at once with the end of
// its log, is not taken for a kill, and Kill says it crashed.
func TestAProcessThatExitsOnItsOwnIsReported(t *testing.T) {
	p := start(t, child(t, "exit"), "broken")
	started := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err := p.WaitReady(ctx, freeAddress(t))
	if err == nil || !strings.Contains(err.Error(), "exit status 1") || !strings.Contains(err.Error(), "unknown flag: --hub-kubeconfg-dir") {
		t.Fatalf("WaitReady: %v; want the exit status and the end of the log", err)
	}
	if waited := time.Since(started); waited > 20*time.Second {
		t.Errorf("WaitReady took %s to notice the exit", waited)
	}
	if !p.ExitedOnItsOwn() {
		t.Errorf("ExitedOnItsOwn = false after the process exited by itself (%s)", p.State())
	}
	if err := p.Kill(); err == nil || !strings.Contains(err.Error(), "exited on its own before it was killed") {
		t.Errorf("Kill after the process exited: %v, want an error saying it exited on its own", err)
	}
}

// Stop is a supervisor's: SIGTERM lets a process end by itself, and one that ignores it is killed
// after the grace period, which is an error.
func TestStopSendsSIGTERMThenKillsAfterTheGracePeriod(t *testing.T) {
	addr := freeAddress(t)
	polite := start(t, child(t, "serve", "CHILDPROC_TEST_ADDR="+addr), "polite")
	readyWithin(t, polite, addr, 30*time.Second)
	stubborn := start(t, child(t, "ignore-sigterm"), "stubborn")
	// Ignoring SIGTERM takes effect once the child says so.
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return strings.Contains(stubborn.LogTail(5), "ignoring SIGTERM"), nil
	}); err != nil {
		t.Fatalf("the child did not start ignoring SIGTERM: %v\n%s", err, stubborn.LogTail(5))
	}
	err := StopAll([]*Process{polite, stubborn}, 2*time.Second)
	if err == nil || !strings.Contains(err.Error(), "stubborn did not stop within 2s of SIGTERM") || strings.Contains(err.Error(), "polite") {
		t.Errorf("StopAll: %v, want an error about stubborn only", err)
	}
	if polite.Running() || stubborn.Running() {
		t.Errorf("after StopAll: polite running %t, stubborn running %t", polite.Running(), stubborn.Running())
	}
	if !strings.Contains(polite.LogTail(5), "stopping on SIGTERM") {
		t.Errorf("polite did not stop by itself on SIGTERM:\n%s", polite.LogTail(5))
	}
	if err := polite.Stop(time.Second); err != nil {
		t.Errorf("Stop of a stopped process: %v, want nothing to do", err)
	}
	if polite.ExitedOnItsOwn() || stubborn.ExitedOnItsOwn() {
		t.Errorf("ExitedOnItsOwn after StopAll: polite %t, stubborn %t; want false, their caller stopped them", polite.ExitedOnItsOwn(), stubborn.ExitedOnItsOwn())
	}
}
