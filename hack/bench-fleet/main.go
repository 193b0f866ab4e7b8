// Command bench-fleet measures ferry-hub against a simulated fleet (`make bench-fleet`): it starts a
// local hub (etcd and kube-apiserver, no spokes), registers N ManagedClusters, binds ManagedClusterSets
// that hold them all to the AppConfigs' namespaces, runs ferry-hub as deploy/hub ships it, places M
// AppConfigs on every cluster, and plays every cluster's agent by
// writing ManifestWork status as ferry-agent does. It reports how long the N×M ManifestWorks take to
// be written, how long the AppConfig summaries take to show status writes at a given rate, what a
// Component change rewrites, how large an AppConfig grows, and ferry-hub's memory, processor time and
// API writes — as a table and as JSON. With --rollout it then rolls a change out progressively, fails
// it in the second stage and measures the halt and the rollback.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferry-mc/ferry/internal/testing/fleetsim"
	"github.com/ferry-mc/ferry/pkg/relist"
)

// options are the benchmark's flags: every number it runs with.
type options struct {
	clusters         int
	appConfigs       int
	statusRate       float64
	initialRate      float64
	lagWrites        int
	agentConcurrency int
	registerParallel int
	hubBinary        string
	hubArgs          []string
	hubShards        int
	maxHubRestarts   int
	deployDir        string
	binaryDir        string
	tempDir          string
	jsonPath         string
	hubLog           string
	worksTimeout     time.Duration
	timeout          time.Duration
	sampleInterval   time.Duration
	keep             bool
	pprofAddress     string
	rollout          bool
	// clusterSets (--cluster-sets) is how many exclusive ManagedClusterSets the clusters are spread
	// over; 0: one set of every cluster, global.
	clusterSets int
	// appConfigNamespaces (--appconfig-namespaces): each AppConfig and its Component in a namespace of
	// its own.
	appConfigNamespaces bool
	// overrides (--overrides): every AppConfig with per-cluster overrides (overrides), and the
	// override change phase.
	overrides bool
	// cpuLoad (--cpu-load) is how many cores a busy loop beside the hub keeps busy for the run.
	cpuLoad float64
}

func main() {
	runAsBurner() // --cpu-load's busy loop is this binary too
	// As ferry-hub: the tracker's informer of every ManifestWork has to fill again under the fleet's
	// writes when it falls behind.
	relist.ListThenWatch()
	if err := newCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-fleet:", err)
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "bench-fleet",
		Short: "Measure ferry-hub against a simulated fleet of managed clusters",
		Long: `bench-fleet starts a local hub (no spokes), registers --clusters ManagedClusters, runs ferry-hub
as deploy/hub ships it, places --appconfigs AppConfigs on every cluster, and writes every ManifestWork's
status as ferry-agent would. Every AppConfig namespace has the ManagedClusterSets bound that hold
every cluster (OCM's tenancy): global, or with --cluster-sets N exclusive sets the clusters are
spread over; --appconfig-namespaces puts each AppConfig in a namespace of its own. With --rollout it
then sets spec.rollout on every AppConfig and rolls a change of every Component out in stages,
failing it in the second. It prints a table and writes the figures as JSON (--json). bench-fleet
sweep-table prints several runs' JSON as one table.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			// Ctrl-C stops the benchmark; what it started is stopped on the way out.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return run(ctx, o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.clusters, "clusters", 10000, "ManagedClusters to register (N)")
	f.IntVar(&o.appConfigs, "appconfigs", 10, "AppConfigs placed on every cluster (M), each with a Component of its own: N×M ManifestWorks")
	f.Float64Var(&o.statusRate, "status-rate", 100, "status writes a second in the lag phases (degrade, then heal --lag-writes works)")
	f.Float64Var(&o.initialRate, "initial-status-rate", 500, "status writes a second of the first report on every work")
	f.IntVar(&o.lagWrites, "lag-writes", 1000, "works degraded and then healed in the lag phases, spread over the AppConfigs (N×M when there are fewer works)")
	f.IntVar(&o.agentConcurrency, "agent-concurrency", fleetsim.DefaultAgentConcurrency, "simulated agents writing at once (each waits for --status-rate, then writes)")
	f.IntVar(&o.registerParallel, "register-concurrency", 64, "clusters registered at once")
	f.StringVar(&o.hubBinary, "hub-binary", "bin/ferry-hub", "the ferry-hub binary (make build writes it)")
	f.StringArrayVar(&o.hubArgs, "hub-arg", nil, "a flag for ferry-hub on top of deploy/hub's, e.g. --hub-arg=--workers=20 (repeatable)")
	f.IntVar(&o.hubShards, "hub-shards", 1, "ferry-hub processes; more than 1 runs each with --shard-index=i --shard-count=n")
	f.IntVar(&o.maxHubRestarts, "max-hub-restarts", 3, "how often a ferry-hub that exits on its own is started again (after the kubelet's backoff) before the run fails; 0 fails at the first exit")
	f.StringVar(&o.deployDir, "deploy-dir", "deploy", "the kustomizations; ferry-hub runs as <dir>/hub's Deployment")
	f.StringVar(&o.binaryDir, "binary-dir", "", "etcd and kube-apiserver (default: bin/control-plane/current)")
	f.StringVar(&o.tempDir, "temp-dir", "", "where the hub's data goes, removed at the end (default: $TMPDIR)")
	f.StringVar(&o.jsonPath, "json", ".local/bench-fleet.json", "where the figures are written as JSON")
	f.StringVar(&o.hubLog, "hub-log", ".local/bench-fleet-hub.log", "ferry-hub's log (shard i: -i before the extension)")
	f.DurationVar(&o.worksTimeout, "works-timeout", 30*time.Minute, "how long to wait for the N×M ManifestWorks")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "how long to wait in every other phase")
	f.DurationVar(&o.sampleInterval, "sample-interval", 500*time.Millisecond, "how often process memory and CPU time are sampled")
	f.StringVar(&o.pprofAddress, "pprof-bind-address", "", "host:port to serve bench-fleet's own Go /debug/pprof profiles on, to see what the benchmark itself spends (ferry-hub's: --hub-arg=--pprof-bind-address=...)")
	f.BoolVar(&o.rollout, "rollout", false, "then roll a change of every Component out progressively (stages of 1 % and 10 % of the clusters, the rest after; "+
		"rollback on failure) with 3 clusters of the second stage reporting it Degraded, the agents answering at --initial-status-rate: "+
		"clusters changed out of stage, time to halt, time to roll back, hub writes")
	f.IntVar(&o.clusterSets, "cluster-sets", 0, "spread the clusters round-robin over this many ManagedClusterSets of selector type ExclusiveClusterSetLabel "+
		"(label cluster.open-cluster-management.io/clusterset=fleet-set-<k> at registration) and bind every one of them in every AppConfig namespace; "+
		"0: one set, global (LabelSelector {}: every cluster), bound in every AppConfig namespace. Either way every AppConfig reaches every cluster")
	f.BoolVar(&o.appConfigNamespaces, "appconfig-namespaces", false, "put each AppConfig and its Component in a namespace of its own, "+namespace+"-<i>, "+
		"instead of all in "+namespace+" (each namespace gets the bindings of every set)")
	f.BoolVar(&o.overrides, "overrides", false, fmt.Sprintf("spread the clusters round-robin over %d regions (label %s=region-<k>) with the ClusterClaim id.k8s.io=<name>, "+
		"give every AppConfig %d overrides, one per region, setting its region's registry and the cluster's ID from its claim, "+
		"and after the Component change change app-0's override of region-0: only app-0's works on region-0's clusters are to be rewritten", regions, fleetsim.RegionLabel, regions))
	f.Float64Var(&o.cpuLoad, "cpu-load", 0, "keep this many cores of a processor busy beside the hub for the whole run (e.g. 0.5: half a core), "+
		"so that the hub's API server answers as on a busier machine, the same way on every machine; 0: none")
	f.BoolVar(&o.keep, "keep", false, "leave the hub and ferry-hub running at the end until interrupted, to look around")
	// bench-fleet sweep-table FILE...: several runs' figures side by side (make bench-fleet FLEET_SWEEP=...).
	cmd.AddCommand(newSweepTableCommand())
	cmd.CompletionOptions.DisableDefaultCmd = true
	return cmd
}

func (o *options) validate() error {
	switch {
	case o.clusters < 1:
		return fmt.Errorf("--clusters %d: want at least 1", o.clusters)
	case o.appConfigs < 1:
		return fmt.Errorf("--appconfigs %d: want at least 1", o.appConfigs)
	case o.statusRate <= 0 || o.initialRate <= 0:
		return fmt.Errorf("--status-rate %v, --initial-status-rate %v: want positive rates", o.statusRate, o.initialRate)
	case o.lagWrites < 1:
		return fmt.Errorf("--lag-writes %d: want at least 1", o.lagWrites)
	case o.hubShards < 1:
		return fmt.Errorf("--hub-shards %d: want at least 1", o.hubShards)
	case o.clusterSets < 0 || o.clusterSets > o.clusters:
		return fmt.Errorf("--cluster-sets %d: want 0 (the global set) to --clusters (%d), so that no set is empty", o.clusterSets, o.clusters)
	case o.cpuLoad < 0 || o.cpuLoad >= float64(runtime.NumCPU()):
		return fmt.Errorf("--cpu-load %v: want 0 (none) to less than the machine's %d cores", o.cpuLoad, runtime.NumCPU())
	case o.rollout && o.clusters < 2:
		return fmt.Errorf("--rollout with --clusters %d: want at least 2, for a second stage to fail in", o.clusters)
	}
	o.lagWrites = min(o.lagWrites, o.clusters*o.appConfigs)
	_, err := hubArgOverrides(o.hubArgs)
	return err
}
