package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// startControllerManager runs kube-controller-manager against the cluster: garbage collection,
// namespace deletion, Deployment/ReplicaSet/Job status and the rest of the built-in controllers.
func startControllerManager(ctx context.Context, c *Cluster, binDir string) (*component, error) {
	dir, kubeconfig, err := componentDir(c, "kube-controller-manager")
	if err != nil {
		return nil, err
	}
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, c.Config.CAData, 0o600); err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0", // several clusters share this machine; no serving port to collide on
		"--controllers=*",
		"--service-account-private-key-file=" + filepath.Join(c.Dir, "apiserver", "sa-signer.key"),
		"--root-ca-file=" + caFile,
		"--concurrent-gc-syncs=20",
	}
	signerKey := filepath.Join(c.Dir, "apiserver", "node-ca.key")
	if _, err := os.Stat(signerKey); err == nil {
		// A cluster with a real node signs the client certificates that approved CSRs of signer
		// kubernetes.io/kube-apiserver-client ask for — how an OCM registration agent gets its hub
		// credential — with the authority its API server trusts for clients (nodeCAAuthn).
		args = append(args,
			"--cluster-signing-kube-apiserver-client-cert-file="+filepath.Join(c.Dir, "apiserver", "node-ca.crt"),
			"--cluster-signing-kube-apiserver-client-key-file="+signerKey)
	}
	m, err := startComponent(c, binDir, "kube-controller-manager", args, nil)
	if err != nil {
		return nil, err
	}

	// Ready once its service-account controller has created the default ServiceAccount: by then the
	// shared informers have synced and every controller runs.
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, errors.Join(err, m.stop())
	}
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = wait.PollUntilContextCancel(waitCtx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := m.exitErr(); err != nil {
			return false, err
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
