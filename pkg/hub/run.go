package hub

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/registration"
	"github.com/ferry-mc/ferry/pkg/relist"
	"github.com/ferry-mc/ferry/pkg/render"
)

// The hub's client rate limits by default (--kube-api-qps, --kube-api-burst): API priority and fairness
// protects the hub's API server, and client-go's default of 5 requests a second would have the hub crawl
// behind a fleet.
const (
	DefaultKubeAPIQPS   = 200
	DefaultKubeAPIBurst = 400
)

// Options configures the hub controllers.
type Options struct {
	// ApplyOnceOnly is --apply-once-only: off, on or force.
	ApplyOnceOnly render.ApplyOnceOnly
	// RevisionsKept is how many old revisions of a Component are kept (besides the latest and the
	// pinned ones).
	RevisionsKept int
	// EarlierRevisionsKept is how many earlier revisions' workloads of a component with a
	// revision-enabled trait stay delivered beside the current one.
	EarlierRevisionsKept int
	// Workers is how many AppConfigs are reconciled at once.
	Workers int
	// ReportBatch is how long agents' status reports are gathered before their AppConfig is
	// reconciled for them (see batchedReports).
	ReportBatch            time.Duration
	MetricsBindAddress     string
	HealthProbeBindAddress string
	// PprofBindAddress serves Go's /debug/pprof profiles when set (not "" or "0").
	PprofBindAddress string
	LeaderElection   bool
	LeaderElectionNS string
	// Shard is the part of the AppConfigs, Components and ManagedClusters this process writes, when
	// several ferry-hub processes split them; the zero value is all of them.
	Shard Shard
	// DeleteCompletedWorks runs the CompletedWorkReconciler.
	DeleteCompletedWorks bool
	// ClusterSetBindings is how placements are held to the ManagedClusterSets bound to an AppConfig's
	// namespace (--cluster-set-bindings); empty means ClusterSetBindingsEnforce.
	ClusterSetBindings ClusterSetBindings
}

// Validate checks the options, naming the flag of a wrong one.
func (o *Options) Validate() error {
	switch o.ApplyOnceOnly {
	case render.ApplyOnceOff, render.ApplyOnceOn, render.ApplyOnceForce:
	default:
		return fmt.Errorf("--apply-once-only %q: want off, on or force", o.ApplyOnceOnly)
	}
	if o.EarlierRevisionsKept < 1 {
		return fmt.Errorf("--earlier-revisions-kept %d: want at least 1", o.EarlierRevisionsKept)
	}
	if o.ReportBatch <= 0 {
		return fmt.Errorf("--report-batch %s: must be positive", o.ReportBatch)
	}
	if o.Workers < 1 {
		return fmt.Errorf("--workers %d: want at least 1", o.Workers)
	}
	if o.RevisionsKept < 1 {
		return fmt.Errorf("--revisions-kept %d: want at least 1", o.RevisionsKept)
	}
	if o.ClusterSetBindings != "" {
		if err := validClusterSetBindings(o.ClusterSetBindings); err != nil {
			return err
		}
	}
	return o.Shard.validate()
}

// Scheme is every type the hub controllers read or write.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, v1alpha2.AddToScheme, workv1.Install, clusterv1.Install, clusterv1beta1.Install, clusterv1beta2.Install,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// SetupWithManager registers the hub controllers with mgr, whose scheme must hold Scheme's types.
func SetupWithManager(mgr ctrl.Manager, o Options) error {
	if err := (&RevisionReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), RevisionsKept: o.RevisionsKept, Shard: o.Shard}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&ClusterAvailabilityReconciler{Client: mgr.GetClient(), Shard: o.Shard}).SetupWithManager(mgr); err != nil {
		return err
	}
	if o.DeleteCompletedWorks {
		if err := (&CompletedWorkReconciler{Client: mgr.GetClient(), Shard: o.Shard}).SetupWithManager(mgr); err != nil {
			return err
		}
	}
	return (&AppConfigReconciler{Client: mgr.GetClient(), Mapper: mgr.GetRESTMapper(), ApplyOnceOnly: o.ApplyOnceOnly,
		EarlierRevisionsKept: o.EarlierRevisionsKept, Workers: o.Workers, Shard: o.Shard, ReportBatch: o.ReportBatch,
		ClusterSetBindings: o.ClusterSetBindings}).SetupWithManager(mgr)
}

// CacheOptions are what the hub's cache keeps; Run uses them, and so must anything else that runs the
// hub controllers in a manager of its own (tests), or it runs with a different cache.
func CacheOptions() cache.Options {
	return cache.Options{
		// managedFields are much of a cached object's metadata and nothing the hub reads.
		DefaultTransform: cache.TransformStripManagedFields(),
		// Each LIST in pages: a relist of 100,000 works in one response outlasts kube-apiserver's
		// request timeout on a busy hub; and each page transformed as it arrives, so that a relist
		// holds no whole works beside the cache's slim ones (pkg/relist).
		NewInformer: relist.NewInformer,
		ByObject: map[client.Object]cache.ByObject{
			// Of the hub's Leases, only those of clusters `ferry-hub clusters add` registered: the
			// hub's own components renew theirs every few seconds, and they are none of Ferry's
			// business.
			&coordinationv1.Lease{}: {Label: labels.SelectorFromSet(labels.Set{registration.RegisteredByLabel: registration.RegisteredByFerry})},
			// A fleet's works are most of the cache: each keeps only what the hub reads of it.
			&workv1.ManifestWork{}: {Transform: slimWork},
		},
	}
}

// Run runs the hub controllers against the hub cfg reaches until ctx is done.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	scheme, err := Scheme()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   CacheOptions(),
		Metrics:                 metricsserver.Options{BindAddress: o.MetricsBindAddress},
		HealthProbeBindAddress:  o.HealthProbeBindAddress,
		PprofBindAddress:        o.PprofBindAddress,
		LeaderElection:          o.LeaderElection,
		LeaderElectionID:        o.Shard.LeaderElectionID(),
		LeaderElectionNamespace: o.LeaderElectionNS,
		// ferry-hub exits when its manager stops: handing the Lease back at once lets a new replica
		// (a rolling update, a restarted shard) lead without waiting for the Lease to expire.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return fmt.Errorf("hub manager: %w", err)
	}
	if err := SetupWithManager(mgr, o); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	// Which part of the hub's objects this process writes, to tell the replicas' logs apart.
	ctrl.Log.WithName("ferry-hub").Info("starting", "shard", o.Shard.String(), "leaderElection", o.LeaderElection,
		"leaderElectionID", o.Shard.LeaderElectionID())
	return mgr.Start(ctx)
}
