package main

import (
	"fmt"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/spf13/pflag"
	"k8s.io/client-go/dynamic"
	appsclient "k8s.io/client-go/kubernetes/typed/apps/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
)

// connection is how the plugin reaches the hub: kubectl's own flags (--kubeconfig, --context,
// -n/--namespace, --server, --token, ...) read by client-go's clientcmd, as kubectl reads them.
// k8s.io/cli-runtime's ConfigFlags would do the same, but the module graph holds it only at v0.30, and
// at the pinned v0.35 it would bring kustomize and more along.
type connection struct {
	loading   *clientcmd.ClientConfigLoadingRules
	overrides *clientcmd.ConfigOverrides
}

func newConnection() *connection {
	return &connection{loading: clientcmd.NewDefaultClientConfigLoadingRules(), overrides: &clientcmd.ConfigOverrides{}}
}

func (c *connection) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.loading.ExplicitPath, clientcmd.RecommendedConfigPathFlag, "", "Kubeconfig of the hub. Default: $KUBECONFIG or ~/.kube/config.")
	clientcmd.BindOverrideFlags(c.overrides, fs, clientcmd.RecommendedConfigOverrideFlags(""))
}

func (c *connection) clientConfig() clientcmd.ClientConfig {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(c.loading, c.overrides)
}

// namespace is the namespace -n names, else the kubeconfig context's, else "default"; explicit says
// whether -n named it.
func (c *connection) namespace() (ns string, explicit bool, err error) {
	ns, explicit, err = c.clientConfig().Namespace()
	if err != nil {
		return "", false, fmt.Errorf("read the kubeconfig: %w", err)
	}
	return ns, explicit, nil
}

// hubClients are the clients of the hub a view is read and watched with, and a rollout steered with.
type hubClients struct {
	works    workclient.Interface
	clusters clusterclient.Interface
	dynamic  dynamic.Interface          // for ApplicationConfigurations, which have no typed clientset
	metadata metadata.Interface         // for watches that only signal a change, and for counting
	apps     appsclient.AppsV1Interface // for the revisions of applications (ControllerRevisions)
	// mapper maps kinds to resources through the hub's discovery, read when first asked.
	mapper meta.RESTMapper
}

func (c *connection) clients() (*hubClients, error) {
	cfg, err := c.clientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("read the kubeconfig: %w", err)
	}
	// A view is a handful of reads per change; kubectl's own limits keep a burst of changes from
	// being throttled to client-go's default of five requests a second.
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 50, 300
	out := &hubClients{}
	if out.works, err = workclient.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("hub client: %w", err)
	}
	if out.clusters, err = clusterclient.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("hub client: %w", err)
	}
	if out.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("hub client: %w", err)
	}
	if out.metadata, err = metadata.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("hub client: %w", err)
	}
	if out.apps, err = appsclient.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("hub client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("hub client: %w", err)
	}
	out.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	return out, nil
}

// target is what every command starts from: the namespace -n names (or the kubeconfig's) and the hub's
// clients.
func (c *connection) target() (string, *hubClients, error) {
	ns, _, err := c.namespace()
	if err != nil {
		return "", nil, err
	}
	clients, err := c.clients()
	return ns, clients, err
}
