package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// controllerManager is a kube-controller-manager process: garbage collection, namespace deletion,
// Deployment/ReplicaSet/Job status and the rest of the built-in controllers.
type controllerManager struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // set when exited is closed
}

func startControllerManager(ctx context.Context, c *Cluster, binDir string) (*controllerManager, error) {
	dir := filepath.Join(c.Dir, "kube-controller-manager")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, c.Name, c.Config); err != nil {
		return nil, err
	}
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, c.Config.CAData, 0o600); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(c.Dir, "logs", "kube-controller-manager.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()

	cmd := exec.Command(filepath.Join(binDir, "kube-controller-manager"),
		"--kubeconfig="+kubeconfig,
		"--leader-elect=false",
		"--secure-port=0", // several clusters share this machine; no serving port to collide on
		"--controllers=*",
		"--service-account-private-key-file="+filepath.Join(c.Dir, "apiserver", "sa-signer.key"),
		"--root-ca-file="+caFile,
		"--concurrent-gc-syncs=20",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Pdeathsig stops it with its owner; the guardian covers the case where the owner's thread is gone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	m := &controllerManager{cmd: cmd, exited: make(chan struct{})}
	go func() {
		m.err = cmd.Wait()
		close(m.exited)
	}()

	// Ready once its service-account controller has created the default ServiceAccount: by then the
	// shared informers have synced and every controller runs.
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, errors.Join(err, m.stop())
	}
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = wait.PollUntilContextCancel(waitCtx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case <-m.exited:
			return false, fmt.Errorf("exited: %v (log in %s)", m.err, logFile.Name())
		default:
		}
		_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("wait for kube-controller-manager: %w", err), m.stop())
	}
	return m, nil
}

func (m *controllerManager) stop() error {
	select {
	case <-m.exited:
		return nil
	default:
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
	return nil
}
