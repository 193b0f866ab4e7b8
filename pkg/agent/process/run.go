package process

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ferry-mc/ferry/pkg/agent"
	"github.com/ferry-mc/ferry/pkg/agent/cloudevents"
	"github.com/ferry-mc/ferry/pkg/agent/feedback"
)

// defaultHubWatchInterval is how often the hub kubeconfig files are checked for a change that needs
// new clients.
const defaultHubWatchInterval = 10 * time.Second

// Run runs the agent for completed, validated options until ctx is done. Unless leader election is
// disabled, the agent works only while it holds the Lease on the spoke (see runLeaderElected). When
// the hub kubeconfig changes (a new server, CA or inline credential), the agent restarts its
// controllers with new clients.
func Run(ctx context.Context, o *Options) error {
	log := klog.FromContext(ctx)
	var ready readiness
	if err := serve(ctx, o.HealthProbeBindAddress, healthHandler(&ready)); err != nil {
		return fmt.Errorf("--%s: %w", flagHealthBindAddress, err)
	}
	registerRuntimeMetrics()
	if err := serve(ctx, o.MetricsBindAddress, promhttp.HandlerFor(ctrlmetrics.Registry, promhttp.HandlerOpts{})); err != nil {
		return fmt.Errorf("--%s: %w", flagMetricsBindAddress, err)
	}
	if err := serve(ctx, o.PprofBindAddress, pprofHandler()); err != nil {
		return fmt.Errorf("--%s: %w", flagPprofBindAddress, err)
	}
	tlsConfig, err := o.servingTLS()
	if err != nil {
		return err
	}
	if err := serveTLS(ctx, o.Listen, tlsConfig, healthHandler(&ready)); err != nil {
		return fmt.Errorf("--%s: %w", flagListen, err)
	}
	interval := o.HubWatchInterval
	if interval <= 0 {
		interval = defaultHubWatchInterval
	}
	if len(o.TerminateOnFiles) > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		WatchFiles(ctx, o.TerminateOnFiles, interval, func() {
			log.Info("a file of --terminate-on-files changed; stopping so that the agent starts again with it", "files", o.TerminateOnFiles)
			cancel()
		})
	}
	if o.DisableLeaderElection {
		return o.runRestartingOnHubChange(ctx, &ready)
	}
	return o.runLeaderElected(ctx, ready.standby.Store, func(ctx context.Context) error {
		return o.runRestartingOnHubChange(ctx, &ready)
	})
}

// runRestartingOnHubChange runs the agent until ctx is done, with new hub clients each time the hub
// kubeconfig files change.
func (o *Options) runRestartingOnHubChange(ctx context.Context, ready *readiness) error {
	log := klog.FromContext(ctx)
	interval := o.HubWatchInterval
	if interval <= 0 {
		interval = defaultHubWatchInterval
	}
	for {
		runCtx, cancel := context.WithCancel(ctx)
		var changed atomic.Bool
		// Watch before loading, so that a change in between is not missed.
		WatchFiles(runCtx, o.HubWatchPaths(), interval, func() {
			changed.Store(true)
			cancel()
		})
		err := runOnce(runCtx, o, &ready.synced)
		cancel()
		ready.synced.Store(false)
		switch {
		case ctx.Err() != nil:
			return nil
		case changed.Load():
			log.Info("hub kubeconfig changed; restarting with new hub clients")
			continue
		}
		return err
	}
}

func runOnce(ctx context.Context, o *Options, ready *atomic.Bool) error {
	if o.cloudEvents() {
		return runOnceOverCloudEvents(ctx, o, ready)
	}
	hub, err := o.HubConfig()
	if err != nil {
		return err
	}
	spoke, err := o.SpokeConfig()
	if err != nil {
		return err
	}
	if err := o.WaitHubAccess(ctx); err != nil {
		return err
	}
	agentID := o.agentID()
	clients, err := NewAgentClients(hub, spoke)
	if err != nil {
		return err
	}
	hubKube, err := kubernetes.NewForConfig(hub)
	if err != nil {
		return fmt.Errorf("hub client: %w", err)
	}
	claims, err := newHubClaimsReporter(o, hub, spoke, klog.FromContext(ctx).WithName("cluster-claims"))
	if err != nil {
		return err
	}
	// The hub hears the cluster is available, and what it claims, once this agent leads and its caches
	// are in sync.
	ctx, cancel := context.WithCancel(ctx)
	synced := make(chan struct{})
	var markSynced sync.Once
	renewer := &hubLeaseRenewer{leases: hubKube.CoordinationV1().Leases(o.SpokeClusterName), holder: agentID,
		log: klog.FromContext(ctx).WithName("hub-lease"), now: time.Now}
	var hubReporters sync.WaitGroup
	for _, report := range []func(context.Context){renewer.run, claims.run} {
		hubReporters.Go(func() {
			select {
			case <-synced:
				report(ctx)
			case <-ctx.Done():
			}
		})
	}
	defer func() { cancel(); hubReporters.Wait() }()
	return startAgent(ctx, o, clients, func() {
		ready.Store(true)
		markSynced.Do(func() { close(synced) })
	})
}

// runOnceOverCloudEvents runs the agent on works from a cloudevents source (grpc, mqtt) until ctx is
// done. As OCM's work agent over these drivers, it renews no hub Lease and reports no ClusterClaims:
// the klusterlet's registration agent does, through the same source.
func runOnceOverCloudEvents(ctx context.Context, o *Options, ready *atomic.Bool) error {
	spoke, err := o.SpokeConfig()
	if err != nil {
		return err
	}
	clients, err := NewSpokeClients(spoke)
	if err != nil {
		return err
	}
	if clients.HubWorks, clients.HubHost, err = cloudevents.Connect(ctx, cloudevents.Options{Driver: o.WorkloadSourceDriver,
		ConfigFile: o.WorkloadSourceConfig, ClusterName: o.SpokeClusterName, ClientID: o.CloudEventsClientID}); err != nil {
		return err
	}
	return startAgent(ctx, o, clients, func() { ready.Store(true) })
}

// agentID is --agent-id, else the cluster's name.
func (o *Options) agentID() string {
	if o.AgentID != "" {
		return o.AgentID
	}
	return o.SpokeClusterName
}

// startAgent runs the agent with clients until ctx is done; ready is called once its caches are in sync.
func startAgent(ctx context.Context, o *Options, clients agent.Clients, ready func()) error {
	defaultExecutor, err := o.defaultExecutor()
	if err != nil {
		return err
	}
	return agent.Start(ctx, agent.Config{
		ClusterName:         o.SpokeClusterName,
		AgentID:             o.agentID(),
		Clients:             clients,
		Workers:             o.Workers,
		StatusSyncInterval:  o.StatusSyncInterval,
		EvictionGracePeriod: o.AppliedManifestWorkEvictionGracePeriod,
		Feedback:            feedback.Options{JSONRaw: o.FeatureGates[FeatureRawFeedbackJSONString], MaxJSONRawLength: int(o.MaxJSONRawLength)},
		ExecutorMode:        agent.ExecutorMode(o.ExecutorMode),
		DefaultExecutor:     defaultExecutor,
		SpokeEvents:         o.SpokeEvents,
		Log:                 klog.FromContext(ctx),
		Ready:               ready,
	})
}

// readiness is what /readyz answers from.
type readiness struct {
	// synced: the leader's caches are in sync and its workers run.
	synced atomic.Bool
	// standby: this agent waits for the Lease. A healthy standby is ready, as Kubernetes expects of
	// standby replicas: a rolling update of a Deployment with more than one replica then proceeds,
	// and the standby is there to take over the moment the leader goes.
	standby atomic.Bool
}

func (r *readiness) ready() bool { return r.synced.Load() || r.standby.Load() }
