package localcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// component is a process that localcluster starts itself beside a cluster's API server
// (kube-controller-manager, kube-scheduler, kwok); envtest starts etcd and kube-apiserver. Its command
// line names paths inside the cluster's directory, so the guardian finds and kills it should the owner
// die without stopping it.
type component struct {
	name   string
	log    string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // set when exited is closed
}

// startComponent starts the binary name of binDir with args, its output appended to logs/<name>.log
// of the cluster. env, when set, is added to the owner's environment.
func startComponent(c *Cluster, binDir, name string, args, env []string) (*component, error) {
	logPath := filepath.Join(c.Dir, "logs", name+".log")
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	// The child holds its own copy of the descriptor.
	defer logFile.Close()
	cmd := exec.Command(filepath.Join(binDir, name), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	// Pdeathsig stops it with its owner; the guardian covers the case where the owner's thread is gone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &component{name: name, log: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// componentDir makes the component's directory in the cluster's and writes an admin kubeconfig there;
// it returns the directory and the kubeconfig's path.
func componentDir(c *Cluster, name string) (dir, kubeconfig string, err error) {
	dir = filepath.Join(c.Dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, c.Name, c.Config); err != nil {
		return "", "", fmt.Errorf("write %s kubeconfig: %w", name, err)
	}
	return dir, kubeconfig, nil
}

// exitErr is non-nil once the process has exited: while the cluster runs, its components never should.
func (p *component) exitErr() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited: %v (log in %s)", p.name, p.err, p.log)
	default:
		return nil
	}
}

// stop ends the process gracefully, or kills it if it takes longer than ten seconds.
func (p *component) stop() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	return nil
}
