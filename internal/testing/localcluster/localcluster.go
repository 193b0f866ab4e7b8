package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/ferry-mc/ferry/manifests"
)

// ClusterSpec describes one cluster to start.
type ClusterSpec struct {
	// Name is the cluster's name; for a spoke it is the managed-cluster name (and the hub namespace its
	// ManifestWorks live in).
	Name string
	// ControllerManager runs kube-controller-manager against the cluster, for tests that depend on
	// built-in controllers (garbage collection, namespace deletion, workload status). On a spoke it
	// also runs kube-scheduler and kwok with simulated nodes, so that workloads' pods are scheduled and
	// run and the workloads reach their real status.
	ControllerManager bool
	// CRDs are installed on the cluster besides the hub's or the spoke's own, before its controller
	// manager starts: the garbage collector then handles their objects from the start, while it
	// notices kinds added later only at its next discovery resync (every 30s), and until then leaves
	// their foreground deletions hanging.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// RealNode gives the cluster one real node — a kubelet with containerd, runc and CNI plugins, and
	// kube-proxy — in place of kwok's simulated ones, so that its pods run as containers of images
	// imported with RealNode.ImportImage. It implies ControllerManager (and kube-scheduler). Its API
	// server keeps the ServiceAccount admission plugin and serves on an address pods reach through the
	// `kubernetes` Service; its kube-controller-manager signs approved client CSRs. It needs root and Debian's containerd, runc, containernetworking-plugins,
	// iptables and conntrack (RealNodeUnavailable says what is missing), and at most one cluster of a
	// machine has one at a time: Start waits for another environment's real node to stop.
	RealNode bool
}

// Options configures Start.
type Options struct {
	// Hub is the hub cluster. Its name defaults to "hub".
	Hub ClusterSpec
	// Spokes are the managed clusters.
	Spokes []ClusterSpec
	// BinaryDir holds etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok.
	// Default: FindBinaryDir().
	BinaryDir string
	// NodeBinaryDir holds kubelet, kube-proxy and pause, for a cluster with a real node.
	// Default: FindNodeBinaryDir().
	NodeBinaryDir string
	// TempDir is where the environment's directory is created. Default: os.TempDir().
	TempDir string
}

// Environment is a running hub and its spokes.
type Environment struct {
	Hub    *Cluster
	Spokes []*Cluster
	// Dir holds every cluster's directory; Stop removes it.
	Dir string

	stopOnce sync.Once
	stopErr  error
	// nodeLock is held while a cluster of the environment has a real node (lockRealNode).
	nodeLock *os.File
}

// Clusters returns the hub followed by the spokes.
func (e *Environment) Clusters() []*Cluster {
	return append([]*Cluster{e.Hub}, e.Spokes...)
}

// Spoke returns the spoke of that name, or nil.
func (e *Environment) Spoke(name string) *Cluster {
	for _, s := range e.Spokes {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Start starts the hub and the spokes in parallel and returns when all are serving with their CRDs
// established. On error nothing it started is left running.
func Start(ctx context.Context, opts Options) (*Environment, error) {
	if opts.Hub.Name == "" {
		opts.Hub.Name = "hub"
	}
	specs := append([]ClusterSpec{opts.Hub}, opts.Spokes...)
	seen := map[string]bool{}
	realNodes := 0
	for _, s := range specs {
		if s.Name == "" || s.Name != filepath.Base(s.Name) || seen[s.Name] {
			return nil, fmt.Errorf("cluster names must be unique, non-empty path elements: %q", s.Name)
		}
		seen[s.Name] = true
		if s.RealNode {
			realNodes++
		}
	}
	if realNodes > 1 {
		return nil, fmt.Errorf("%d clusters ask for a real node; a machine runs one at a time", realNodes)
	}
	binDir := opts.BinaryDir
	if binDir == "" {
		var err error
		if binDir, err = FindBinaryDir(); err != nil {
			return nil, err
		}
	}
	nodeBinDir := opts.NodeBinaryDir
	if realNodes > 0 {
		if reason := RealNodeUnavailable(); reason != "" {
			return nil, fmt.Errorf("this machine cannot run a real node: %s", reason)
		}
		if nodeBinDir == "" {
			var err error
			if nodeBinDir, err = FindNodeBinaryDir(); err != nil {
				return nil, err
			}
		}
	}
	hubCRDs, err := manifests.HubCRDs()
	if err != nil {
		return nil, err
	}
	spokeCRDs, err := manifests.SpokeCRDs()
	if err != nil {
		return nil, err
	}

	dir, err := os.MkdirTemp(opts.TempDir, "ferry-localcluster-")
	if err != nil {
		return nil, err
	}
	if err := guard(dir); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	env := &Environment{Dir: dir}
	if realNodes > 0 {
		if env.nodeLock, err = lockRealNode(ctx); err != nil {
			return nil, errors.Join(err, env.Stop())
		}
	}

	clusters := make([]*Cluster, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i, spec := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			crds := spokeCRDs
			if i == 0 {
				crds = hubCRDs
			}
			// envtest installs the CRDs it is given into its own list; give each cluster its own copies.
			clusters[i], errs[i] = startCluster(ctx, spec, i == 0, binDir, nodeBinDir, filepath.Join(dir, spec.Name), append(deepCopyCRDs(crds), deepCopyCRDs(spec.CRDs)...))
		}()
	}
	wg.Wait()
	env.Hub, env.Spokes = clusters[0], clusters[1:]
	if err := errors.Join(errs...); err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	return env, nil
}

// Stop stops every cluster and removes the environment's directory. It is safe to call more than once.
func (e *Environment) Stop() error {
	e.stopOnce.Do(func() {
		var wg sync.WaitGroup
		clusters := append([]*Cluster{e.Hub}, e.Spokes...)
		errs := make([]error, len(clusters))
		for i, c := range clusters {
			if c == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = c.stop()
			}()
		}
		wg.Wait()
		// Whatever failed to stop gracefully is killed here rather than left behind.
		if err := killAndRemove(e.Dir, stopTimeout); err != nil {
			errs = append(errs, err)
		} else {
			release(e.Dir)
		}
		// Only once the node's traces are gone may the next real node start.
		if e.nodeLock != nil {
			errs = append(errs, e.nodeLock.Close())
		}
		e.stopErr = errors.Join(errs...)
	})
	return e.stopErr
}

// stopTimeout bounds how long Stop waits for processes that ignored the graceful stop to die.
const stopTimeout = 30 * time.Second

// ownedDirs lists every directory the environment made: its own and those envtest makes outside it.
func (e *Environment) ownedDirs() []string {
	dirs := []string{e.Dir}
	for _, c := range e.Clusters() {
		if d := c.env.WebhookInstallOptions.LocalServingCertDir; d != "" {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// StartForTest starts an environment for a test and stops it when the test ends.
func StartForTest(t testing.TB, opts Options) *Environment {
	t.Helper()
	env, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("start local clusters: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop local clusters: %v", err)
		}
	})
	return env
}

func deepCopyCRDs(in []*apiextensionsv1.CustomResourceDefinition) []*apiextensionsv1.CustomResourceDefinition {
	out := make([]*apiextensionsv1.CustomResourceDefinition, len(in))
	for i, c := range in {
		out[i] = c.DeepCopy()
	}
	return out
}
