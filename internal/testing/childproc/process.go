package childproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a binary running as a child of this process. Every run writes its output to one log,
// after a line naming the run.
type Process struct {
	// Name says which binary runs for what (and as whom), for messages.
	Name string
	// Log is the file the output of every run goes to.
	Log string

	// template is the command every run starts a copy of: an exec.Cmd runs once.
	template *exec.Cmd

	mu     sync.Mutex
	run    *exec.Cmd
	exited chan struct{} // closed when run has exited
	runs   int
	ended  bool // run was ended by its caller: Kill, Stop or StopAll
}

// Start starts cmd with its output in the file logPath (created anew) and returns it as the Process
// called name. The process is put in a process group of its own and is killed with SIGKILL when this
// process ends, however that ends: nothing it starts outlives its caller. cmd's Stdout, Stderr and
// SysProcAttr are replaced; its Path, Args, Env and Dir are what every run uses.
func Start(cmd *exec.Cmd, name, logPath string) (*Process, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("log of %s: %w", name, err)
	}
	if err := log.Close(); err != nil {
		return nil, fmt.Errorf("log of %s: %w", name, err)
	}
	p := &Process{Name: name, Log: logPath, template: cmd}
	if err := p.start(); err != nil {
		return nil, err
	}
	return p, nil
}

// start starts a new run of the template, appending to the log.
func (p *Process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	log, err := os.OpenFile(p.Log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("log of %s: %w", p.Name, err)
	}
	// The child holds its own descriptor.
	defer log.Close()
	// A line between runs, so that the log shows which run said what.
	if _, err := fmt.Fprintf(log, "==== %s, run %d ====\n", p.Name, p.runs+1); err != nil {
		return fmt.Errorf("log of %s: %w", p.Name, err)
	}
	t := p.template
	cmd := &exec.Cmd{Path: t.Path, Args: t.Args, Env: t.Env, Dir: t.Dir, Stdout: log, Stderr: log,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s (%s): %w", p.Name, cmd.Path, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	p.run, p.exited, p.ended = cmd, exited, false
	p.runs++
	return nil
}

// Restart starts the process again with the same command after it has exited (see Kill). Its output
// is appended to the log.
func (p *Process) Restart() error {
	if p.Running() {
		return fmt.Errorf("restart %s: run %d is still running (pid %d)", p.Name, p.Runs(), p.PID())
	}
	return p.start()
}

// Exited is closed when the current run has exited.
func (p *Process) Exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// Running reports whether the current run has not exited.
func (p *Process) Running() bool {
	select {
	case <-p.Exited():
		return false
	default:
		return true
	}
}

// ExitedOnItsOwn reports whether the current run has exited without Kill or Stop ending it: it
// crashed, or something other than its caller stopped it.
func (p *Process) ExitedOnItsOwn() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.ended && !running(p.exited)
}

func running(exited chan struct{}) bool {
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// State describes how the current run ended ("exit status 1", "signal: killed"), or says that it runs.
func (p *Process) State() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if running(p.exited) {
		return fmt.Sprintf("running as pid %d", p.run.Process.Pid)
	}
	return p.run.ProcessState.String()
}

// PID is the process id of the current run.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.run.Process.Pid
}

// Runs counts the runs, the first included.
func (p *Process) Runs() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runs
}

// killTimeout bounds the wait for a process to be gone after SIGKILL.
const killTimeout = 30 * time.Second

// Kill kills the current run with SIGKILL, as a crash or an OOM kill would end it, and waits until it
// is gone. A run that had already exited is an error: it crashed, which is not what a caller killing
// it provokes.
func (p *Process) Kill() error {
	p.mu.Lock()
	run, exited, runs := p.run, p.exited, p.runs
	if !running(exited) {
		p.mu.Unlock()
		return fmt.Errorf("%s exited on its own before it was killed (run %d): %v", p.Name, runs, run.ProcessState)
	}
	p.ended = true
	p.mu.Unlock()
	_ = run.Process.Signal(syscall.SIGKILL)
	select {
	case <-exited:
		return nil
	case <-time.After(killTimeout):
		return fmt.Errorf("%s (pid %d) still running %s after SIGKILL", p.Name, run.Process.Pid, killTimeout)
	}
}

// Stop stops the process as a supervisor stops a container: SIGTERM, and SIGKILL if it has not exited
// within grace, which is then an error. A process that has exited already is left as it is.
func (p *Process) Stop(grace time.Duration) error { return StopAll([]*Process{p}, grace) }

// StopAll stops every process as Stop does, all at once: each gets grace to finish what it is doing.
func StopAll(procs []*Process, grace time.Duration) error {
	for _, p := range procs {
		p.mu.Lock()
		if running(p.exited) {
			p.ended = true
			_ = p.run.Process.Signal(syscall.SIGTERM)
		}
		p.mu.Unlock()
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	expired := false
	var errs []error
	for _, p := range procs {
		if !expired {
			select {
			case <-p.Exited():
				continue
			case <-timer.C:
				expired = true
			}
		}
		if !p.Running() {
			continue
		}
		p.mu.Lock()
		_ = p.run.Process.Kill()
		p.mu.Unlock()
		<-p.Exited()
		errs = append(errs, fmt.Errorf("%s did not stop within %s of SIGTERM; killed it", p.Name, grace))
	}
	return errors.Join(errs...)
}

// LogTail returns the last n lines of the log, or why it cannot be read.
func (p *Process) LogTail(n int) string {
	data, err := os.ReadFile(p.Log)
	if err != nil {
		return fmt.Sprintf("(log %s: %v)", p.Log, err)
	}
	return Tail(string(data), n)
}

// Tail is the last n lines of s, a log's text.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
