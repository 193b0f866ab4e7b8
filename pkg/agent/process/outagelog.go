package process

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// WithQuietOutages returns a logger that writes to base, except errors that only say the hub's or the
// spoke's API server cannot be reached: while one is down, those become one line when the outage
// starts ("hub API server unreachable; retrying quietly until it answers") and one when it ends ("hub
// API server reachable again", with how long it was down), however many requests failed meanwhile.
// The agent keeps retrying exactly as before; only the log changes. Install it as klog's logger, so
// that client-go's reflectors and the agent's controllers both log through it. ctx bounds the probes
// that find the end of an outage.
//
// It reads the hub and spoke addresses from o once: after a hub kubeconfig change to another server,
// errors of the new one are logged as they come.
//
// Over a cloudevents source (grpc, mqtt) only the spoke's outages are folded: the source's client logs
// one line per lost connection and retries with its own backoff.
func WithQuietOutages(ctx context.Context, o *Options, base logr.Logger) (logr.Logger, error) {
	configs := map[string]*rest.Config{}
	if !o.cloudEvents() {
		hub, err := o.HubConfig()
		if err != nil {
			return base, err
		}
		configs["hub"] = hub
	}
	spoke, err := o.SpokeConfig()
	if err != nil {
		return base, err
	}
	configs["spoke"] = spoke
	var endpoints []apiEndpoint
	for role, cfg := range configs {
		e, err := endpointOf(role, cfg)
		if err != nil {
			return base, err
		}
		endpoints = append(endpoints, e)
	}
	return withOutageTracking(base, newOutageTracker(ctx, base, endpoints...)), nil
}

// endpointOf describes the API server cfg reaches, probed by its /readyz, which every authenticated
// (and by default every anonymous) client may read.
func endpointOf(role string, cfg *rest.Config) (apiEndpoint, error) {
	host := cfg.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	u, err := url.Parse(host)
	if err != nil {
		return apiEndpoint{}, fmt.Errorf("%s API server address %q: %w", role, cfg.Host, err)
	}
	probeCfg := rest.CopyConfig(cfg)
	probeCfg.QPS = -1 // a probe must not wait behind the agent's own requests for a token
	client, err := discovery.NewDiscoveryClientForConfig(probeCfg)
	if err != nil {
		return apiEndpoint{}, fmt.Errorf("%s API server client: %w", role, err)
	}
	return apiEndpoint{
		role: role,
		host: u.Host,
		probe: func(ctx context.Context) error {
			return client.RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
		},
	}, nil
}
