// Command ferry-hub runs the Ferry hub controllers on the hub cluster: OAM ApplicationConfigurations in,
// one ManifestWork per target cluster out, and their status back.
package main

import (
	"context"
	goflag "flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ferry-mc/ferry/pkg/hub"
	"github.com/ferry-mc/ferry/pkg/relist"
	"github.com/ferry-mc/ferry/pkg/render"
)

func main() {
	relist.ListThenWatch()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newCommand().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ferry-hub:", strings.Join(strings.Fields(err.Error()), " "))
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	o := hub.Options{ApplyOnceOnly: render.ApplyOnceOff, RevisionsKept: hub.DefaultRevisionsKept, EarlierRevisionsKept: hub.DefaultEarlierRevisionsKept, Workers: hub.DefaultWorkers}
	var kubeconfig, applyOnce string
	var qps float32
	var burst int
	logConfig := textlogger.NewConfig(textlogger.Output(os.Stderr))
	cmd := &cobra.Command{
		Use:           "ferry-hub",
		Short:         "Turn OAM ApplicationConfigurations into ManifestWorks for managed clusters",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// One structured logger for the controllers (a failing reconcile logs the AppConfig and the
			// error) and for client-go underneath them.
			log := textlogger.NewLogger(logConfig)
			ctrl.SetLogger(log)
			klog.SetLoggerWithOptions(log, klog.ContextualLogger(true))
			o.ApplyOnceOnly = render.ApplyOnceOnly(applyOnce)
			if err := o.Validate(); err != nil {
				return err
			}
			var cfg *rest.Config
			var err error
			if kubeconfig != "" {
				cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
			} else {
				cfg, err = ctrl.GetConfig()
			}
			if err != nil {
				return fmt.Errorf("hub kubeconfig: %w", err)
			}
			// API priority and fairness protects the hub; client-go's default of 5 requests a second
			// would make the hub controller crawl behind a few hundred AppConfigs.
			cfg.QPS, cfg.Burst = qps, burst
			return hub.Run(cmd.Context(), cfg, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "Kubeconfig file for the hub. Default: in-cluster, else $KUBECONFIG or ~/.kube/config.")
	f.StringVar(&applyOnce, "apply-once-only", string(render.ApplyOnceOff), "off: agents keep workloads and traits as rendered (Update); on: applied only when the AppConfig or Component changes (ApplyOnce); force: as on, and deleted objects stay deleted until then (ApplyOnceForce).")
	f.IntVar(&o.RevisionsKept, "revisions-kept", o.RevisionsKept, "Old revisions kept per Component, besides the latest and those an AppConfig pins.")
	f.Float32Var(&qps, "kube-api-qps", hub.DefaultKubeAPIQPS, "Requests per second to the hub's API server.")
	f.IntVar(&burst, "kube-api-burst", hub.DefaultKubeAPIBurst, "Burst of requests to the hub's API server.")
	f.IntVar(&o.Workers, "workers", o.Workers, "Number of ApplicationConfigurations reconciled in parallel.")
	f.DurationVar(&o.ReportBatch, "report-batch", hub.DefaultReportBatch, "How long agents' status reports of an AppConfig's ManifestWorks are gathered before its status is folded again: a fleet's stream of reports costs one reconcile per AppConfig per period, and the AppConfig's summary is at most this much behind its works. A change of a work's spec, labels or deletion is not batched.")
	f.IntVar(&o.EarlierRevisionsKept, "earlier-revisions-kept", o.EarlierRevisionsKept, "For a component with a revisionEnabled trait (a rollout), how many earlier revisions' workloads stay on the clusters beside the current one; older ones are removed.")
	f.StringVar(&o.MetricsBindAddress, "metrics-bind-address", ":8080", "host:port to serve Prometheus metrics on; 0 turns them off.")
	f.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", ":8081", "host:port to serve /healthz and /readyz on; 0 turns them off.")
	f.StringVar(&o.PprofBindAddress, "pprof-bind-address", "0", "host:port to serve Go's /debug/pprof profiles on (memory, CPU) for a person investigating; 0 turns them off.")
	f.BoolVar(&o.DeleteCompletedWorks, "delete-completed-works", true, "Delete every ManifestWork on the hub (Ferry's and others') once it has been Complete for its spec.deleteOption.ttlSecondsAfterFinished, as OCM's hub does with the gate CleanUpCompletedManifestWork; false leaves them.")
	f.StringVar((*string)(&o.ClusterSetBindings), "cluster-set-bindings", string(hub.ClusterSetBindingsEnforce), "enforce: an ApplicationConfiguration is delivered only to the clusters of the ManagedClusterSets bound to its namespace by ManagedClusterSetBindings, whatever its placement names; audit: delivered wherever its placement says, the clusters enforce would refuse only reported (condition ClustersBound, status.placement.refused, an event) — the step of an upgrade before enforcing.")
	f.BoolVar(&o.LeaderElection, "leader-elect", false, "Elect a leader among several ferry-hub replicas.")
	f.StringVar(&o.LeaderElectionNS, "leader-election-namespace", "", "Namespace of the leader election lease (default: the pod's).")
	f.IntVar(&o.Shard.Index, "shard-index", 0, "Which shard this process is, from 0: it writes only the AppConfigs, Components and ManagedClusters whose key hashes to it (see docs/scaling.md).")
	f.IntVar(&o.Shard.Count, "shard-count", 1, "How many shards split the hub's work, each a ferry-hub Deployment of its own; 1 is one hub for everything. Replicas of one shard elect a leader among themselves (Lease ferry-hub-shard-<index>-of-<count>).")
	logFlags := goflag.NewFlagSet("log", goflag.ContinueOnError)
	logConfig.AddFlags(logFlags) // -v and -vmodule, as every Kubernetes component
	f.AddGoFlagSet(logFlags)
	f.Lookup("v").Usage = "Log verbosity: 0 says what a person needs to know (failing reconciles among it), higher adds detail."
	cmd.AddCommand(newClustersCommand())
	return cmd
}
