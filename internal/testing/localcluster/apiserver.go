package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// StopAPIServer stops the cluster's kube-apiserver and nothing else, to stage an outage of the API
// server: etcd keeps running with the cluster's data, the certificates stay in the cluster's directory,
// and kube-controller-manager (if any) keeps retrying. StartAPIServer brings it back. Stopping a stopped
// API server does nothing. Neither may run concurrently with the other or with the environment's Stop.
//
// kube-apiserver stops listening at SIGTERM but then drains open requests for up to its request timeout
// (60 s), and clients' watches keep it that long. A stop that is not over within apiServerStopGrace is
// finished with SIGKILL: for the clients the outage began at the SIGTERM either way, and etcd holds
// everything the server acknowledged.
func (c *Cluster) StopAPIServer() error {
	procs, err := c.Processes()
	if err != nil {
		return err
	}
	for _, p := range procs {
		if p.Name != "kube-apiserver" {
			continue
		}
		_ = syscall.Kill(p.PID, syscall.SIGTERM)
		if !waitGone(p.PID, apiServerStopGrace) {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
			if !waitGone(p.PID, 10*time.Second) {
				return fmt.Errorf("stop %s kube-apiserver: pid %d still running after SIGKILL", c.Name, p.PID)
			}
		}
	}
	// envtest learns of the exit from its own wait on the process, which may lag a moment behind; its
	// Stop resets what a later Start needs and fails until it has.
	var stopErr error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if stopErr = c.env.ControlPlane.APIServer.Stop(); stopErr == nil {
			return nil
		}
	}
	return fmt.Errorf("stop %s kube-apiserver: %w", c.Name, stopErr)
}

// apiServerStopGrace bounds a graceful stop of kube-apiserver in StopAPIServer.
const apiServerStopGrace = 5 * time.Second

// waitGone waits up to timeout for pid to exit and reports whether it did.
func waitGone(pid int, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if !ProcessAlive(pid) {
			return true
		}
	}
	return !ProcessAlive(pid)
}

// StartAPIServer starts the cluster's kube-apiserver again after StopAPIServer and returns once it is
// ready. It serves on the same address with the same serving certificate and the same client CA, so
// every kubeconfig written for the cluster (admin, users, an agent's hub kubeconfig) keeps working, and
// it reads the same etcd, so every object written before the stop is there.
//
// envtest's APIServer keeps its port, its certificate directory (CertDir is ours, so it is not a
// temporary one to clean) and its client CA across a Stop and a Start; it does not keep the log writer
// open, so the log is reopened here for appending.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	apiServer := c.env.ControlPlane.APIServer
	log, err := os.OpenFile(filepath.Join(c.Dir, "logs", "kube-apiserver.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	// The child process holds its own copy of the descriptor.
	defer log.Close()
	apiServer.Out, apiServer.Err = log, log
	if err := apiServer.Start(); err != nil {
		err = fmt.Errorf("start %s kube-apiserver again (log in %s): %w", c.Name, log.Name(), err)
		return errors.Join(err, apiServer.Stop())
	}
	if err := c.waitReady(ctx); err != nil {
		return fmt.Errorf("%s kube-apiserver started again: %w", c.Name, err)
	}
	return nil
}

// waitReady waits until the API server reports ready: /healthz, which envtest waits for, answers
// before every post-start hook (CRD and RBAC caches among them) has finished.
func (c *Cluster) waitReady(ctx context.Context) error {
	kube, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var last error
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, last = kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("not ready within a minute: %w (last: %v)", err, last)
	}
	return nil
}
