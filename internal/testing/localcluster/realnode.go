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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// RealNode is a cluster's real node: a kubelet with containerd, runc and CNI plugins, and kube-proxy,
// running on this machine as root. Pods scheduled to it run as containers; images come only from
// ImportImage, never from a registry.
//
// The kubelet and kube-proxy use the cluster's admin credentials: the API server authorises with RBAC
// only (no Node authorizer, no NodeRestriction), so a node identity would restrict nothing here.
type RealNode struct {
	// Name is the node's name.
	Name string
	// IP is the node's address, which the cluster's API server binds and advertises too.
	IP string
	// Started and Ready bound the time the node took to come up (from containerd's start to the Node
	// Ready and kube-proxy's rules written).
	Started, Ready time.Time

	dir                string
	containerd         *containerd
	kubelet, kubeProxy *component
}

// ContainerdSocket is the address of the node's containerd, for `ctr --address`.
func (n *RealNode) ContainerdSocket() string { return n.containerd.socket }

// ImportImage loads a docker archive (`docker save`'s format: `make images` writes them, and
// WriteImageArchive) into the node's containerd, under the tags the archive carries. Pods then run it
// with imagePullPolicy Never or IfNotPresent.
func (n *RealNode) ImportImage(ctx context.Context, archive string) error {
	if err := n.containerd.importImage(ctx, archive); err != nil {
		return fmt.Errorf("import %s into node %s: %w", archive, n.Name, err)
	}
	return nil
}

// configureRealNodeAPIServer prepares the cluster's API server for a real node: bound to and
// advertising nodeIP, with a serving certificate that also names the `kubernetes` Service, the
// ServiceAccount admission plugin kept (envtest disables it), and a client certificate and CA for
// talking to the kubelet (logs, exec) at its InternalIP. It returns the CA that signed them, which
// signs the kubelet's certificates too.
func configureRealNodeAPIServer(ctx context.Context, apiServer *envtest.APIServer) (*certAuthority, error) {
	if err := ensureNodeIP(ctx); err != nil {
		return nil, err
	}
	ca, err := newCertAuthority("ferry-localcluster")
	if err != nil {
		return nil, err
	}
	certDir := apiServer.CertDir
	if err := writeRealNodeAPIServerCerts(ca, certDir, nodeIP); err != nil {
		return nil, err
	}
	caFile := filepath.Join(certDir, "node-ca.crt")
	if err := os.WriteFile(caFile, ca.certPEM, 0o600); err != nil {
		return nil, err
	}
	// kube-controller-manager signs the client certificates CSRs ask for with the authority's key.
	caKey, err := ca.keyPEM()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(certDir, "node-ca.key"), caKey, 0o600); err != nil {
		return nil, err
	}
	apiServer.SecureServing.Authn = &nodeCAAuthn{ca: ca}
	// envtest picks an address and port of its own unless given both.
	port, err := freePort(nodeIP.String())
	if err != nil {
		return nil, err
	}
	apiServer.SecureServing.Address = nodeIP.String()
	apiServer.SecureServing.Port = port
	// envtest generates no certificate when apiserver.crt exists, and then takes the CA from here.
	apiServer.SecureServing.CA = ca.certPEM
	args := apiServer.Configure()
	args.Disable("disable-admission-plugins")
	args.Set("advertise-address", nodeIP.String())
	args.Set("service-cluster-ip-range", serviceClusterIPRange)
	// The node's hostname resolves to 127.0.0.1 here, where the kubelet does not listen.
	args.Set("kubelet-preferred-address-types", "InternalIP,Hostname")
	args.Set("kubelet-client-certificate", filepath.Join(certDir, "kubelet-client.crt"))
	args.Set("kubelet-client-key", filepath.Join(certDir, "kubelet-client.key"))
	args.Set("kubelet-certificate-authority", caFile)
	return ca, nil
}

// startWithRealNode starts kube-scheduler and the real node, and records the node in c.Nodes.
func (c *Cluster) startWithRealNode(ctx context.Context, binDir, nodeBinDir string, ca *certAuthority) error {
	var err error
	if c.scheduler, err = startScheduler(c, binDir); err != nil {
		return fmt.Errorf("start %s kube-scheduler: %w", c.Name, err)
	}
	if err := c.startRealNode(ctx, nodeBinDir, ca); err != nil {
		return err
	}
	c.Nodes = []string{c.RealNode.Name}
	return nil
}

// startRealNode starts the node of c — containerd, then the kubelet, then kube-proxy — and returns once
// the Node is Ready and schedulable and the Services' rules are written. It records what it started in
// c as it goes, so that c.stop stops it on error too.
func (c *Cluster) startRealNode(ctx context.Context, binDir string, ca *certAuthority) error {
	n := &RealNode{Name: c.Name + "-node", IP: nodeIP.String(), dir: filepath.Join(c.Dir, "node"), Started: time.Now()}
	c.RealNode = n
	if err := os.MkdirAll(n.dir, 0o700); err != nil {
		return err
	}
	if err := enableIPForward(); err != nil {
		return fmt.Errorf("enable IP forwarding: %w", err)
	}
	cniConf := filepath.Join(n.dir, "cni", "net.d")
	if err := writeCNIConfig(cniConf, filepath.Join(n.dir, "cni", "ipam")); err != nil {
		return fmt.Errorf("write CNI configuration: %w", err)
	}
	var err error
	if n.containerd, err = startContainerd(ctx, c, filepath.Join(n.dir, "containerd"), cniConf); err != nil {
		return fmt.Errorf("start %s containerd: %w", c.Name, err)
	}
	pauseArchive := filepath.Join(n.dir, "pause.tar")
	if err := WriteImageArchive(pauseArchive, PauseImage, filepath.Join(binDir, "pause")); err != nil {
		return err
	}
	if err := n.ImportImage(ctx, pauseArchive); err != nil {
		return err
	}

	kubeletDir, kubeconfig, err := componentDir(c, filepath.Join("node", "kubelet"))
	if err != nil {
		return err
	}
	args, err := kubeletArgs(ca, kubeletDir, kubeconfig, n.Name, n.containerd.socket)
	if err != nil {
		return fmt.Errorf("configure %s kubelet: %w", c.Name, err)
	}
	if n.kubelet, err = startComponent(c, binDir, "kubelet", args, nil); err != nil {
		return fmt.Errorf("start %s kubelet: %w", c.Name, err)
	}
	if n.kubeProxy, err = startKubeProxy(ctx, c, binDir, n.Name); err != nil {
		return fmt.Errorf("start %s kube-proxy: %w", c.Name, err)
	}
	kube, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	if err := n.waitReady(ctx, kube); err != nil {
		return fmt.Errorf("%s node %s: %w", c.Name, n.Name, err)
	}
	n.Ready = time.Now()
	return nil
}

// waitReady waits until the node is Ready and schedulable, and the default namespace has what every
// pod needs: the default ServiceAccount (a pod created before it is refused) and the kube-root-ca.crt
// ConfigMap its token volume projects.
func (n *RealNode) waitReady(ctx context.Context, kube kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var waitingFor string
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := errors.Join(n.containerd.exitErr(), n.kubelet.exitErr(), n.kubeProxy.exitErr()); err != nil {
			return false, err
		}
		node, err := kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil || !isSchedulable(node) {
			waitingFor = "the Node to be Ready and untainted"
			return false, nil
		}
		if _, err := kube.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{}); err != nil {
			waitingFor = "the default ServiceAccount"
			return false, ignoreNotFound(err)
		}
		if _, err := kube.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); err != nil {
			waitingFor = "the kube-root-ca.crt ConfigMap"
			return false, ignoreNotFound(err)
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w (kubelet log in %s)", waitingFor, err, n.kubelet.log)
	}
	return nil
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// stopRealNode deletes the node's pods, so that the kubelet stops their sandboxes through containerd
// and the CNI plugins (which removes their network namespaces, addresses and masquerading rules), then
// stops kube-proxy, the kubelet and containerd. What they leave on the machine (mounts, iptables
// chains, the pods' bridge, shims) killAndRemove cleans up, for a stop and for the guardian alike.
func (c *Cluster) stopRealNode() error {
	n := c.RealNode
	var errs []error
	if n.kubelet != nil && n.kubelet.exitErr() == nil && n.containerd.exitErr() == nil {
		errs = append(errs, c.drainRealNode())
	}
	for _, p := range []*component{n.kubeProxy, n.kubelet} {
		if p != nil {
			errs = append(errs, p.stop())
		}
	}
	if n.containerd != nil {
		errs = append(errs, n.containerd.stop())
	}
	return errors.Join(errs...)
}

// drainRealNode cordons the node and deletes every pod bound to it, as `kubectl drain` does, and waits
// up to half a minute for the kubelet to have stopped them and removed their objects. Cordoned, the node
// takes no replacement that a Deployment's ReplicaSet makes for a deleted pod: it stays Pending.
func (c *Cluster) drainRealNode() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kube, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	cordon := []byte(`{"spec":{"unschedulable":true}}`)
	if _, err := kube.CoreV1().Nodes().Patch(ctx, c.RealNode.Name, types.StrategicMergePatchType, cordon, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("cordon %s node %s: %w", c.Name, c.RealNode.Name, err)
	}
	onNode := metav1.ListOptions{FieldSelector: "spec.nodeName=" + c.RealNode.Name}
	var left int
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods, err := kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, onNode)
		if err != nil {
			return false, nil // the API server may be busy; ask again
		}
		left = len(pods.Items)
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			// A second of grace: the kubelet, not the API server, then removes the object, once the
			// containers and the sandbox are stopped.
			err := kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)})
			if err != nil && !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err)
			}
		}
		return left == 0, nil
	})
	if err != nil {
		return fmt.Errorf("drain %s node %s: %d pods left: %w", c.Name, c.RealNode.Name, left, err)
	}
	return nil
}
