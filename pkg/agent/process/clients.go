package process

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"

	"github.com/ferry-mc/ferry/pkg/agent"
)

// hubKubeconfigPath is the hub kubeconfig file, and the flag it came from.
func (o *Options) hubKubeconfigPath() (path, flag string) {
	if o.HubKubeconfig != "" {
		return o.HubKubeconfig, flagHubKubeconfig
	}
	if o.HubKubeconfigDir != "" {
		return filepath.Join(o.HubKubeconfigDir, KubeconfigFile), flagHubKubeconfigDir
	}
	return "", flagHubKubeconfig
}

// HubConfig returns the client configuration for the hub, with the hub rate limits and a user agent
// naming ferry-agent.
//
// Client certificate, key and token files stay file references in the result (relative ones resolved
// against the kubeconfig's directory), never inlined, so that client-go picks up their rotation by
// itself; see kubeconfig.go for what it does and does not reload.
func (o *Options) HubConfig() (*rest.Config, error) {
	path, flag := o.hubKubeconfigPath()
	if path == "" {
		return nil, fmt.Errorf("--%s or --%s is required", flagHubKubeconfig, flagHubKubeconfigDir)
	}
	cfg, err := loadKubeconfig(path)
	if err != nil {
		return nil, fmt.Errorf("hub kubeconfig %s (--%s): %s", path, flag, oneLine(err))
	}
	applyClientSettings(cfg, o.HubKubeAPIQPS, o.HubKubeAPIBurst, "hub")
	if o.wrapConfig != nil {
		o.wrapConfig("hub", cfg)
	}
	return cfg, nil
}

// SpokeConfig returns the client configuration for the managed cluster: --spoke-kubeconfig, else the
// in-cluster configuration, else $KUBECONFIG or ~/.kube/config. It carries the spoke rate limits and a
// user agent naming ferry-agent.
func (o *Options) SpokeConfig() (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch {
	case o.SpokeKubeconfig != "":
		if cfg, err = loadKubeconfig(o.SpokeKubeconfig); err != nil {
			return nil, fmt.Errorf("spoke kubeconfig %s (--%s): %s", o.SpokeKubeconfig, flagSpokeKubeconfig, oneLine(err))
		}
	default:
		cfg, err = rest.InClusterConfig()
		if errors.Is(err, rest.ErrNotInCluster) {
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
			if err != nil {
				return nil, fmt.Errorf("spoke: no --%s, not running in a cluster, and no usable kubeconfig in $KUBECONFIG or %s: %s",
					flagSpokeKubeconfig, clientcmd.RecommendedHomeFile, oneLine(err))
			}
		} else if err != nil {
			return nil, fmt.Errorf("spoke: in-cluster configuration: %s", oneLine(err))
		}
	}
	applyClientSettings(cfg, o.KubeAPIQPS, o.KubeAPIBurst, "spoke")
	if o.wrapConfig != nil {
		o.wrapConfig("spoke", cfg)
	}
	return cfg, nil
}

// loadKubeconfig loads one kubeconfig file with client-go's loading rules, which resolve the file
// references in it against its directory and keep them as references.
func loadKubeconfig(path string) (*rest.Config, error) {
	if err := checkFile(path); err != nil {
		return nil, err
	}
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, errors.New("no cluster, user or context in it")
		}
		return nil, err
	}
	return cfg, nil
}

func applyClientSettings(cfg *rest.Config, qps float32, burst int, role string) {
	cfg.QPS, cfg.Burst = qps, burst
	if qps == 0 {
		cfg.QPS = -1 // client-go reads 0 as "5"; a negative QPS is its "no rate limiter"
	}
	cfg.UserAgent = userAgent(role)
}

// userAgent is e.g. "ferry-agent/v0.1.0 (linux/amd64) hub".
func userAgent(role string) string {
	version := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		version = bi.Main.Version
	}
	return fmt.Sprintf("ferry-agent/%s (%s/%s) %s", version, runtime.GOOS, runtime.GOARCH, role)
}

// CheckHubReachable makes one cheap request the agent's least-privilege hub credential allows — a
// namespaced list of at most one ManifestWork in the cluster namespace — and says in one line what is
// wrong when it fails: the hub cannot be reached, the credential is rejected or not allowed, or the
// ManifestWork API is not served.
func (o *Options) CheckHubReachable(ctx context.Context) error {
	cfg, err := o.HubConfig()
	if err != nil {
		return err
	}
	cfg.Timeout = hubCheckTimeout
	client, err := workclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("hub %s: %s", cfg.Host, oneLine(err))
	}
	ctx, cancel := context.WithTimeout(ctx, hubCheckTimeout)
	defer cancel()
	ns := o.SpokeClusterName
	_, err = client.WorkV1().ManifestWorks(ns).List(ctx, metav1.ListOptions{Limit: 1})
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err):
		return &hubForbiddenError{msg: fmt.Sprintf("hub %s: credential cannot list manifestworks in namespace %s: forbidden: %s", cfg.Host, ns, oneLine(apiMessage(err)))}
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("hub %s: credential rejected (401 Unauthorized): the client certificate or token is not valid for this hub", cfg.Host)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("hub %s: does not serve manifestworks.work.open-cluster-management.io/v1: is the OCM work API installed?", cfg.Host)
	case isAPIStatus(err):
		return fmt.Errorf("hub %s: list manifestworks in namespace %s: %s", cfg.Host, ns, oneLine(err))
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("hub %s: unreachable: no answer within %s", cfg.Host, hubCheckTimeout)
	case ctx.Err() != nil:
		return fmt.Errorf("hub %s: check cancelled: %w", cfg.Host, ctx.Err())
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the request URL repeats the host
	}
	return fmt.Errorf("hub %s: unreachable: %s", cfg.Host, oneLine(err))
}

// hubForbiddenError is CheckHubReachable's answer when the hub knows the credential but lets it not
// list the cluster's ManifestWorks — yet: a cluster joined with `clusteradm join` gets its client
// certificate before `clusteradm accept`, and its role on the hub only after.
type hubForbiddenError struct{ msg string }

func (e *hubForbiddenError) Error() string { return e.msg }

// hubAccessBackoff spaces the checks of an agent waiting for its role on the hub: soon after the
// first, then at most every 30 seconds, as a client-go reflector retries a refused list.
var hubAccessBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Steps: math.MaxInt32, Cap: 30 * time.Second}

// WaitHubAccess returns once CheckHubReachable passes, or at once with its error unless that error is
// a forbidden list: then the agent waits for the hub to grant its cluster's role — the state of a
// cluster joined but not yet accepted, where OCM's own work agent waits too — logging why, and
// checks again with a backoff until ctx is done. Any other failure (no answer, a credential the hub
// rejects, no ManifestWork API) ends the agent with one line, for its supervisor to show.
func (o *Options) WaitHubAccess(ctx context.Context) error {
	log := klog.FromContext(ctx)
	backoff := hubAccessBackoff
	waited := false
	last := ""
	for {
		err := o.CheckHubReachable(ctx)
		var forbidden *hubForbiddenError
		if !errors.As(err, &forbidden) {
			if err == nil && waited {
				log.Info("the hub now lets this agent list its cluster's ManifestWorks; starting")
			}
			return err
		}
		waited = true
		if forbidden.msg != last {
			log.Info("waiting for the hub to grant this cluster's role (as `clusteradm accept` does); checking again with a backoff", "reason", forbidden.msg)
			last = forbidden.msg
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s (gave up waiting: %w)", forbidden.msg, ctx.Err())
		case <-time.After(backoff.Step()):
		}
	}
}

func isAPIStatus(err error) bool {
	var s apierrors.APIStatus
	return errors.As(err, &s)
}

// apiMessage is the API server's own message of a status error.
func apiMessage(err error) error {
	var s apierrors.APIStatus
	if errors.As(err, &s) && s.Status().Message != "" {
		return errors.New(s.Status().Message)
	}
	return err
}

// oneLine folds a multi-line error message into one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
}

// NewAgentClients builds the agent's clients: ManifestWorks from the hub's kube-apiserver at hub, and
// everything else from the managed cluster at spoke.
func NewAgentClients(hub, spoke *rest.Config) (agent.Clients, error) {
	c, err := NewSpokeClients(spoke)
	if err != nil {
		return c, err
	}
	c.HubHost = hub.Host
	if c.HubWorks, err = workclient.NewForConfig(hub); err != nil {
		return c, fmt.Errorf("hub work client: %w", err)
	}
	return c, nil
}

// NewSpokeClients builds the agent's clients of the managed cluster at spoke; HubWorks and HubHost are
// left for the caller to fill.
func NewSpokeClients(spoke *rest.Config) (agent.Clients, error) {
	c := agent.Clients{Spoke: spoke}
	var err error
	if c.SpokeWorks, err = workclient.NewForConfig(spoke); err != nil {
		return c, fmt.Errorf("spoke work client: %w", err)
	}
	if c.SpokeDynamic, err = dynamic.NewForConfig(spoke); err != nil {
		return c, fmt.Errorf("spoke dynamic client: %w", err)
	}
	if c.SpokeMetadata, err = metadata.NewForConfig(spoke); err != nil {
		return c, fmt.Errorf("spoke metadata client: %w", err)
	}
	if c.SpokeDiscovery, err = discovery.NewDiscoveryClientForConfig(spoke); err != nil {
		return c, fmt.Errorf("spoke discovery client: %w", err)
	}
	if c.SpokeKube, err = kubernetes.NewForConfig(spoke); err != nil {
		return c, fmt.Errorf("spoke client: %w", err)
	}
	return c, nil
}
