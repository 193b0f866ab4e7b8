package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Cluster is one running local cluster.
type Cluster struct {
	// Name is the cluster's name: "hub" for the hub, the managed-cluster name for a spoke.
	Name string
	// Hub is true for the hub cluster.
	Hub bool
	// Dir holds everything of this cluster: etcd data, certificates, logs, kubeconfigs. Every process
	// of the cluster names a path inside it on its command line.
	Dir string
	// Config is an admin (system:masters) client configuration.
	Config *rest.Config
	// Kubeconfig is the path of an admin kubeconfig whose context is named after the cluster.
	Kubeconfig string
	// Nodes names the simulated nodes, whose kubelets kwok plays, of a spoke that runs
	// kube-controller-manager, or the real node of a cluster with one; other clusters have none.
	Nodes []string
	// RealNode is the cluster's real node, if it was asked for one (ClusterSpec.RealNode).
	RealNode *RealNode
	// Started and Ready bound the time the cluster took to come up.
	Started, Ready time.Time

	env                  *envtest.Environment
	kcm, scheduler, kwok *component
}

// Processes lists the live processes of this cluster.
func (c *Cluster) Processes() ([]Process, error) {
	return processesUnder(c.Dir)
}

// URL is the cluster's API server address.
func (c *Cluster) URL() string { return c.Config.Host }

func startCluster(ctx context.Context, spec ClusterSpec, hub bool, binDir, nodeBinDir, dir string, crds []*apiextensionsv1.CustomResourceDefinition) (*Cluster, error) {
	c := &Cluster{Name: spec.Name, Hub: hub, Dir: dir, Started: time.Now()}
	for _, sub := range []string{"etcd", "apiserver", "logs"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, err
		}
	}
	etcdLog, err := os.Create(filepath.Join(dir, "logs", "etcd.log"))
	if err != nil {
		return nil, err
	}
	defer etcdLog.Close()
	apiLog, err := os.Create(filepath.Join(dir, "logs", "kube-apiserver.log"))
	if err != nil {
		return nil, err
	}
	defer apiLog.Close()

	etcd := &envtest.Etcd{
		Path:    filepath.Join(binDir, "etcd"),
		DataDir: filepath.Join(dir, "etcd"),
		Out:     etcdLog,
		Err:     etcdLog,
	}
	// The data is thrown away with the cluster; fsync only costs time.
	etcd.Configure().Set("unsafe-no-fsync", "true")
	apiServer := &envtest.APIServer{
		Path:    filepath.Join(binDir, "kube-apiserver"),
		CertDir: filepath.Join(dir, "apiserver"),
		Out:     apiLog,
		Err:     apiLog,
	}
	var nodeCA *certAuthority
	if spec.RealNode {
		if nodeCA, err = configureRealNodeAPIServer(ctx, apiServer); err != nil {
			return nil, fmt.Errorf("configure %s kube-apiserver for a real node: %w", c.Name, err)
		}
		spec.ControllerManager = true
	}
	c.env = &envtest.Environment{
		ControlPlane:             envtest.ControlPlane{Etcd: etcd, APIServer: apiServer},
		BinaryAssetsDirectory:    binDir,
		CRDs:                     crds,
		ControlPlaneStartTimeout: time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	c.env.CRDInstallOptions.MaxTime = time.Minute
	cfg, err := c.env.Start()
	// envtest always makes a directory of its own for webhook serving certificates, outside ours.
	if d := c.env.WebhookInstallOptions.LocalServingCertDir; d != "" {
		if gerr := guard(d); gerr != nil {
			err = errors.Join(err, gerr)
		}
	}
	if err != nil {
		err = fmt.Errorf("start %s control plane (logs in %s): %w", c.Name, filepath.Join(dir, "logs"), err)
		return nil, errors.Join(err, c.stop())
	}
	c.Config = cfg

	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, c.Name, cfg); err != nil {
		return nil, errors.Join(fmt.Errorf("write %s kubeconfig: %w", c.Name, err), c.stop())
	}

	if spec.ControllerManager {
		// The built-in controllers and a spoke's nodes come up side by side, each waiting for its own
		// readiness. A node is schedulable only once kube-controller-manager's node lifecycle controller
		// has lifted the not-ready taint the API server gives every new node, so a spoke without it
		// gets no nodes, as a real cluster without it could use none. The first to fail ends the
		// other's wait.
		g, gctx := errgroup.WithContext(ctx)
		g.Go(func() error {
			var err error
			if c.kcm, err = startControllerManager(gctx, c, binDir); err != nil {
				return fmt.Errorf("start %s kube-controller-manager: %w", c.Name, err)
			}
			return nil
		})
		switch {
		case spec.RealNode:
			g.Go(func() error { return c.startWithRealNode(gctx, binDir, nodeBinDir, nodeCA) })
		case !hub:
			g.Go(func() error { return c.startNodes(gctx, binDir) })
		}
		if err := g.Wait(); err != nil {
			return nil, errors.Join(err, c.stop())
		}
	}
	c.Ready = time.Now()
	return c, nil
}

// stop stops the cluster's processes: a real node first (its pods are deleted through the API server),
// then the components beside the API server (together), then the API server and etcd.
func (c *Cluster) stop() error {
	var errs []error
	if c.RealNode != nil {
		errs = append(errs, c.stopRealNode())
	}
	var g errgroup.Group
	for _, p := range []*component{c.kcm, c.scheduler, c.kwok} {
		if p != nil {
			g.Go(p.stop)
		}
	}
	errs = append(errs, g.Wait())
	if c.env != nil {
		if err := c.env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop %s control plane: %w", c.Name, err))
		}
		if d := c.env.WebhookInstallOptions.LocalServingCertDir; d != "" {
			if err := os.RemoveAll(d); err != nil {
				errs = append(errs, err)
			} else {
				release(d)
			}
		}
	}
	return errors.Join(errs...)
}

// writeKubeconfig writes an admin kubeconfig for cfg with its cluster, user and context named after
// the cluster, so that several can be merged with KUBECONFIG=a:b:c.
func writeKubeconfig(path, name string, cfg *rest.Config) error {
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return err
	}
	if u.Scheme == "" {
		u.Scheme = "https"
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: u.String(), CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name+"-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name + "-admin"}
	kc.CurrentContext = name
	return clientcmd.WriteToFile(*kc, path)
}
