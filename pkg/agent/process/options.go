package process

import (
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/ferry-mc/ferry/pkg/agent"
	"github.com/ferry-mc/ferry/pkg/agent/cloudevents"
)

// Flag names. Those OCM's work agent has are spelled as OCM spells them, so that a Deployment written
// for OCM's agent keeps its arguments.
const (
	flagSpokeClusterName   = "spoke-cluster-name"
	flagHubKubeconfig      = "hub-kubeconfig"
	flagHubKubeconfigDir   = "hub-kubeconfig-dir"
	flagSpokeKubeconfig    = "spoke-kubeconfig"
	flagAgentID            = "agent-id"
	flagKubeAPIQPS         = "kube-api-qps"
	flagKubeAPIBurst       = "kube-api-burst"
	flagHubKubeAPIQPS      = "hub-kube-api-qps"
	flagHubKubeAPIBurst    = "hub-kube-api-burst"
	flagStatusSyncInterval = "status-sync-interval"
	flagWorkers            = "workers"
	flagMetricsBindAddress = "metrics-bind-address"
	flagPprofBindAddress   = "pprof-bind-address"
	flagHealthBindAddress  = "health-probe-bind-address"

	flagLeaderElectionNamespace     = "leader-election-namespace"
	flagLeaderElectionLeaseDuration = "leader-election-lease-duration"
	flagLeaderElectionRenewDeadline = "leader-election-renew-deadline"
	flagLeaderElectionRetryPeriod   = "leader-election-retry-period"

	// OCM's work agent flags that a klusterlet passes.
	flagWorkloadSourceDriver   = "workload-source-driver"
	flagWorkloadSourceConfig   = "workload-source-config"
	flagTerminateOnFiles       = "terminate-on-files"
	flagMaxJSONRawLength       = "max-json-raw-length"
	flagFeatureGates           = "feature-gates"
	flagEvictionGracePeriod    = "appliedmanifestwork-eviction-grace-period"
	flagDisableLeaderElection  = "disable-leader-election"
	flagCloudEventsClientID    = "cloudevents-client-id"
	flagCloudEventsClientCodec = "cloudevents-client-codecs"
	// OCM's registration agent's, for the ClusterClaims ferry-agent reports where none runs.
	flagMaxCustomClusterClaims = "max-custom-cluster-claims"

	// OCM's agents serve health over HTTPS (library-go's controller command).
	flagListen          = "listen"
	flagTLSMinVersion   = "tls-min-version"
	flagTLSCipherSuites = "tls-cipher-suites"

	// The rest of OCM's work agent command line (its library-go controller command and klog flags).
	flagHealthPort        = "health-port"
	flagKubeconfig        = "kubeconfig"
	flagClusterName       = "cluster-name"
	flagNamespace         = "namespace"
	flagMaxFeedbackWatch  = "max-feedback-watch"
	flagVerbosity         = "v"
	flagVModule           = "vmodule"
	flagLogFlushFrequency = "log-flush-frequency"

	// Ferry's: how a work's spec.executor is enforced.
	flagExecutorMode    = "executor-mode"
	flagDefaultExecutor = "default-executor"

	// Ferry's: Events on the managed cluster's objects.
	flagSpokeEvents = "spoke-events"
)

// The workload sources ferry-agent reads ManifestWorks from (--workload-source-driver): the hub's API
// server (kube, the default), OCM's gRPC server (grpc) or an MQTT broker (mqtt), the last two as
// cloudevents (pkg/agent/cloudevents), as OCM's work agent reads them.
const (
	WorkloadSourceKube = "kube"
	WorkloadSourceGRPC = cloudevents.DriverGRPC
	WorkloadSourceMQTT = cloudevents.DriverMQTT
)

// FeatureRawFeedbackJSONString is OCM's feature gate that reports structured status feedback values
// as JSON text (JsonRaw).
const FeatureRawFeedbackJSONString = "RawFeedbackJsonString"

// Files of a hub kubeconfig directory, laid out as the hub-kubeconfig-secret that the OCM registration
// agent maintains for a cluster joined with `clusteradm join`: a kubeconfig whose user names tls.crt and
// tls.key by relative path, and the cluster and agent names.
const (
	KubeconfigFile  = "kubeconfig"
	TLSCertFile     = "tls.crt"
	TLSKeyFile      = "tls.key"
	ClusterNameFile = "cluster-name"
	AgentNameFile   = "agent-name"
)

// hubCheckTimeout bounds CheckHubReachable.
const hubCheckTimeout = 10 * time.Second

// Options is the configuration of the work agent, filled from its command line.
type Options struct {
	// SpokeClusterName is the managed cluster's name: the hub namespace its ManifestWorks live in.
	// Empty: read from the cluster-name file of HubKubeconfigDir (see Complete).
	SpokeClusterName string
	// HubKubeconfig is a kubeconfig file for the hub. Exactly one of HubKubeconfig and
	// HubKubeconfigDir is set.
	HubKubeconfig string
	// HubKubeconfigDir is a directory laid out as OCM's hub-kubeconfig-secret (see KubeconfigFile).
	HubKubeconfigDir string
	// SpokeKubeconfig is a kubeconfig file for the spoke. Empty: the in-cluster configuration, else
	// $KUBECONFIG or ~/.kube/config.
	SpokeKubeconfig string
	// AgentID identifies this agent among agents serving the same cluster. Empty: read from the
	// agent-name file of HubKubeconfigDir, else left to Run.
	AgentID string

	// KubeAPIQPS and KubeAPIBurst limit requests to the spoke; HubKubeAPIQPS and HubKubeAPIBurst
	// requests to the hub. A QPS of 0 turns client-side rate limiting off.
	KubeAPIQPS      float32
	KubeAPIBurst    int
	HubKubeAPIQPS   float32
	HubKubeAPIBurst int

	// StatusSyncInterval is how often the status of applied resources is re-read and reported.
	StatusSyncInterval time.Duration
	// Workers is the number of ManifestWorks reconciled in parallel.
	Workers int

	// MetricsBindAddress and HealthProbeBindAddress are host:port addresses to serve metrics and
	// health probes on; "0" turns either off.
	MetricsBindAddress     string
	HealthProbeBindAddress string
	// PprofBindAddress serves Go's /debug/pprof profiles when set (not "" or "0"), as ferry-hub's
	// flag of the same name: for a person investigating the agent's memory or processor time.
	PprofBindAddress string
	// HubWatchInterval is how often the hub kubeconfig files are checked for a change that needs new
	// hub clients (and TerminateOnFiles for any change). Not a flag; zero means every 10 seconds.
	HubWatchInterval time.Duration

	// WorkloadSourceDriver is where ManifestWorks come from: WorkloadSourceKube, WorkloadSourceGRPC or
	// WorkloadSourceMQTT. WorkloadSourceConfig is, for kube, the hub kubeconfig file (OCM's spelling of
	// HubKubeconfig); for grpc and mqtt, the driver's configuration file as OCM's agent reads it.
	WorkloadSourceDriver string
	WorkloadSourceConfig string
	// TerminateOnFiles are files whose change ends the agent (Run returns), for its supervisor to
	// start it again with them, as OCM's agents do.
	TerminateOnFiles []string
	// MaxJSONRawLength is the longest JsonRaw status feedback value, in bytes.
	MaxJSONRawLength int32
	// MaxCustomClusterClaims is how many ClusterClaims besides the reserved ones are reported on a
	// cluster ferry-hub registered (hubClaimsReporter).
	MaxCustomClusterClaims int
	// FeatureGates are OCM feature gates by name. RawFeedbackJsonString turns JsonRaw feedback on;
	// the others of OCM's work agent change nothing here.
	FeatureGates map[string]bool
	// AppliedManifestWorkEvictionGracePeriod is how long an AppliedManifestWork no hub delivers any
	// more stays before it is evicted.
	AppliedManifestWorkEvictionGracePeriod time.Duration
	// DisableLeaderElection turns leader election off: the agent then works as soon as it starts,
	// and a second agent for the same cluster would apply the same works at the same time.
	DisableLeaderElection bool
	// LeaderElectionNamespace is the spoke namespace of the Lease (LeaderElectionLeaseName). Empty:
	// POD_NAMESPACE, else the pod's service account namespace, else DefaultLeaderElectionNamespace
	// (see Complete).
	LeaderElectionNamespace string
	// LeaderElectionLeaseDuration is how long a Lease not renewed keeps standbys waiting;
	// LeaderElectionRenewDeadline how long the leader keeps trying to renew it before it stops its
	// workers; LeaderElectionRetryPeriod how often candidates try.
	LeaderElectionLeaseDuration time.Duration
	LeaderElectionRenewDeadline time.Duration
	LeaderElectionRetryPeriod   time.Duration
	// CloudEventsClientID names the agent to a grpc or mqtt source (default <cluster>-work-agent, as the
	// klusterlet passes it); CloudEventsClientCodecs is accepted as OCM's agent accepts it (which uses
	// the manifestbundles codec whatever it says).
	CloudEventsClientID     string
	CloudEventsClientCodecs []string
	// OCMCommandLine says the agent was started with OCM's work agent command line (`agent …`, as the
	// klusterlet starts it): Listen then defaults to OCM's :8443.
	OCMCommandLine bool
	// Listen is where /healthz, /livez and /readyz are served over HTTPS with a self-signed
	// certificate made at start, as OCM's agents serve them; "" or "0" serves nothing there.
	Listen string
	// TLSMinVersion and TLSCipherSuites configure that server (Kubernetes' names: VersionTLS12,
	// TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, ...).
	TLSMinVersion   string
	TLSCipherSuites []string
	// HealthPort, when set, is the port of Listen on every address (":<port>"), as the newer
	// klusterlet templates pass --health-port for a health check port other than 8443.
	HealthPort int
	// Kubeconfig, ClusterName and Namespace are OCM's other spellings: the spoke kubeconfig when
	// --spoke-kubeconfig is not given, the cluster name, and the namespace the agent runs in (where
	// the leader-election Lease is when --leader-election-namespace is not given).
	Kubeconfig  string
	ClusterName string
	Namespace   string
	// MaxFeedbackWatch and LogFlushFrequency are accepted so that an OCM work agent's command line
	// runs unchanged; they change nothing (see AddFlags).
	MaxFeedbackWatch  int32
	LogFlushFrequency time.Duration
	// Verbosity and VModule set the log verbosity, globally and per file, as klog's -v and --vmodule.
	Verbosity int
	VModule   string
	// ExecutorMode: ExecutorCheck or ExecutorImpersonate (see executor.go).
	ExecutorMode string
	// DefaultExecutor, namespace/name of a ServiceAccount on the managed cluster, is the executor of
	// works that name none; empty: they apply with the agent's rights.
	DefaultExecutor string
	// SpokeEvents records Events on the managed cluster's objects the agent acts on (agent.Config).
	SpokeEvents bool

	// clusterNameFile is the file SpokeClusterName was read from, when it was; errors name it.
	clusterNameFile string
	// featureGates is --feature-gates as given; Complete parses it into FeatureGates.
	featureGates map[string]string
	// keepLeaseOnStop, for tests, leaves the Lease held when the agent stops, as a killed process
	// does, instead of releasing it for a standby to take at once.
	keepLeaseOnStop bool
	// wrapConfig, for tests, changes every client configuration the agent makes; role is "hub" or
	// "spoke".
	wrapConfig func(role string, cfg *rest.Config)
}

// Defaults.
//
// Client-side rate limits: client-go's token bucket exists to protect an API server from a runaway
// client, but API servers protect themselves with API Priority and Fairness (on by default since
// Kubernetes 1.20, GA in 1.29), which queues and sheds load per flow far better than a fixed per-client limit. A fixed low limit
// only makes the agent slow: OCM's 50 QPS caps it at about 25 applied objects per second (a read and
// a write each). The agent must keep up with hundreds of ManifestWorks and apply more than 700
// objects per second on a local API server, which is about 1,500 requests per second on the spoke,
// so the spoke limit sits above that and the burst absorbs a full resync. The hub limit is lower but
// still generous: the agent writes one status per ManifestWork there, and the hub is shared by every
// spoke, where priority and fairness keeps one agent from starving the others.
const (
	DefaultKubeAPIQPS         float32 = 2000
	DefaultKubeAPIBurst               = 4000
	DefaultHubKubeAPIQPS      float32 = 200
	DefaultHubKubeAPIBurst            = 400
	DefaultStatusSyncInterval         = 10 * time.Second // as OCM's work agent
	// DefaultWorkers: applying is dominated by API round trips, not CPU; ten works in flight keep a
	// spoke API server busy without letting one agent monopolise it.
	DefaultWorkers                = 10
	DefaultMetricsBindAddress     = ":8080"
	DefaultHealthProbeBindAddress = ":8081"
)

// NewOptions returns Options with their defaults.
func NewOptions() *Options {
	return &Options{
		KubeAPIQPS:                             DefaultKubeAPIQPS,
		KubeAPIBurst:                           DefaultKubeAPIBurst,
		HubKubeAPIQPS:                          DefaultHubKubeAPIQPS,
		HubKubeAPIBurst:                        DefaultHubKubeAPIBurst,
		StatusSyncInterval:                     DefaultStatusSyncInterval,
		Workers:                                DefaultWorkers,
		MetricsBindAddress:                     DefaultMetricsBindAddress,
		HealthProbeBindAddress:                 DefaultHealthProbeBindAddress,
		PprofBindAddress:                       "0",
		WorkloadSourceDriver:                   WorkloadSourceKube,
		MaxJSONRawLength:                       1024, // OCM's default
		MaxCustomClusterClaims:                 DefaultMaxCustomClusterClaims,
		AppliedManifestWorkEvictionGracePeriod: agent.DefaultEvictionGracePeriod,
		LeaderElectionLeaseDuration:            DefaultLeaderElectionLeaseDuration,
		LeaderElectionRenewDeadline:            DefaultLeaderElectionRenewDeadline,
		LeaderElectionRetryPeriod:              DefaultLeaderElectionRetryPeriod,
		ExecutorMode:                           string(agent.ExecutorCheck),
		SpokeEvents:                            true,
	}
}

// AddFlags binds the options to flags of fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.SpokeClusterName, flagSpokeClusterName, o.SpokeClusterName,
		"Name of the managed cluster (the hub namespace of its ManifestWorks). Default: the cluster-name file of --"+flagHubKubeconfigDir+".")
	fs.StringVar(&o.HubKubeconfig, flagHubKubeconfig, o.HubKubeconfig,
		"Kubeconfig file for the hub. Give this or --"+flagHubKubeconfigDir+".")
	fs.StringVar(&o.HubKubeconfigDir, flagHubKubeconfigDir, o.HubKubeconfigDir,
		"Directory laid out as the hub-kubeconfig-secret of a cluster joined with clusteradm: kubeconfig, tls.crt, tls.key, cluster-name. Give this or --"+flagHubKubeconfig+".")
	fs.StringVar(&o.SpokeKubeconfig, flagSpokeKubeconfig, o.SpokeKubeconfig,
		"Kubeconfig file for the managed cluster. Default: the in-cluster configuration, else $KUBECONFIG or ~/.kube/config.")
	fs.StringVar(&o.AgentID, flagAgentID, o.AgentID,
		"ID of this agent. Default: the agent-name file of --"+flagHubKubeconfigDir+".")
	fs.Float32Var(&o.KubeAPIQPS, flagKubeAPIQPS, o.KubeAPIQPS,
		"Requests per second to the managed cluster's API server; 0 turns client-side rate limiting off.")
	fs.IntVar(&o.KubeAPIBurst, flagKubeAPIBurst, o.KubeAPIBurst,
		"Burst of requests to the managed cluster's API server.")
	fs.Float32Var(&o.HubKubeAPIQPS, flagHubKubeAPIQPS, o.HubKubeAPIQPS,
		"Requests per second to the hub's API server; 0 turns client-side rate limiting off.")
	fs.IntVar(&o.HubKubeAPIBurst, flagHubKubeAPIBurst, o.HubKubeAPIBurst,
		"Burst of requests to the hub's API server.")
	fs.DurationVar(&o.StatusSyncInterval, flagStatusSyncInterval, o.StatusSyncInterval,
		"Interval to re-read the status of applied resources and report it to the hub. Every work is looked at again at this interval, "+
			"but an object its watch shows unchanged since an apply that wrote nothing is not read again: an idle agent sends its spoke no request, "+
			"and a change on the spoke is read (and drift put back) as soon as the watch shows it.")
	fs.IntVar(&o.Workers, flagWorkers, o.Workers,
		"Number of ManifestWorks reconciled in parallel.")
	fs.StringVar(&o.MetricsBindAddress, flagMetricsBindAddress, o.MetricsBindAddress,
		"host:port to serve Prometheus metrics on; 0 turns them off.")
	fs.StringVar(&o.HealthProbeBindAddress, flagHealthBindAddress, o.HealthProbeBindAddress,
		"host:port to serve /healthz and /readyz on; 0 turns them off.")
	fs.StringVar(&o.PprofBindAddress, flagPprofBindAddress, o.PprofBindAddress,
		"host:port to serve Go's /debug/pprof profiles on (memory, CPU) for a person investigating; 0 turns them off.")

	fs.StringVar(&o.WorkloadSourceDriver, flagWorkloadSourceDriver, o.WorkloadSourceDriver,
		"Where ManifestWorks come from, as OCM's work agent: kube (the hub's API server), grpc (OCM's gRPC server) or mqtt (an MQTT broker), the last two as cloudevents with the manifestbundles codec.")
	fs.StringVar(&o.WorkloadSourceConfig, flagWorkloadSourceConfig, o.WorkloadSourceConfig,
		"With --"+flagWorkloadSourceDriver+"=kube, the hub kubeconfig file: the same as --"+flagHubKubeconfig+". With grpc or mqtt, the driver's configuration file (OCM's format: url/brokerHost, CA, client certificate or token, MQTT topics); required for them.")
	fs.StringSliceVar(&o.TerminateOnFiles, flagTerminateOnFiles, o.TerminateOnFiles,
		"Files whose change ends the agent, for its supervisor (the kubelet) to start it again with them. Repeatable.")
	fs.Int32Var(&o.MaxJSONRawLength, flagMaxJSONRawLength, o.MaxJSONRawLength,
		"The longest JsonRaw status feedback value, in bytes (JsonRaw values need --"+flagFeatureGates+"="+FeatureRawFeedbackJSONString+"=true).")
	fs.IntVar(&o.MaxCustomClusterClaims, flagMaxCustomClusterClaims, o.MaxCustomClusterClaims,
		"On a cluster registered with ferry-hub clusters add, how many ClusterClaims besides the reserved ones (id.k8s.io, ...) ferry-agent reports in its ManagedCluster's status, the first by name, as OCM's registration agent does elsewhere.")
	fs.StringToStringVar(&o.featureGates, flagFeatureGates, nil,
		"OCM feature gates, name=true|false,...: "+FeatureRawFeedbackJSONString+" reports structured status feedback as JSON text; the work agent's other gates change nothing here.")
	fs.DurationVar(&o.AppliedManifestWorkEvictionGracePeriod, flagEvictionGracePeriod, o.AppliedManifestWorkEvictionGracePeriod,
		"How long an AppliedManifestWork of this agent stays once no hub delivers it (its ManifestWork deleted without the agent, or the cluster moved to another hub) before it is deleted with the objects it alone owns.")
	fs.BoolVar(&o.DisableLeaderElection, flagDisableLeaderElection, o.DisableLeaderElection,
		"Turn leader election off. With it on (the default), of the agents of one cluster only the holder of the Lease "+LeaderElectionLeaseName+" on the managed cluster applies works.")
	fs.StringVar(&o.LeaderElectionNamespace, flagLeaderElectionNamespace, o.LeaderElectionNamespace,
		"Namespace on the managed cluster of the leader-election Lease "+LeaderElectionLeaseName+" (OCM's work agent's). Default: $POD_NAMESPACE, else the pod's service account namespace, else "+DefaultLeaderElectionNamespace+".")
	fs.DurationVar(&o.LeaderElectionLeaseDuration, flagLeaderElectionLeaseDuration, o.LeaderElectionLeaseDuration,
		"How long standbys wait for a Lease the leader stopped renewing before taking it over.")
	fs.DurationVar(&o.LeaderElectionRenewDeadline, flagLeaderElectionRenewDeadline, o.LeaderElectionRenewDeadline,
		"How long the leader keeps trying to renew its Lease before it stops its workers and campaigns again.")
	fs.DurationVar(&o.LeaderElectionRetryPeriod, flagLeaderElectionRetryPeriod, o.LeaderElectionRetryPeriod,
		"How often candidates try to acquire, and the leader to renew, the Lease.")
	fs.StringVar(&o.CloudEventsClientID, flagCloudEventsClientID, o.CloudEventsClientID,
		"With --"+flagWorkloadSourceDriver+"=grpc or mqtt, the ID this agent subscribes as. Default: <cluster>-work-agent (what the klusterlet passes).")
	fs.StringVar(&o.Listen, flagListen, o.Listen,
		"host:port to serve /healthz, /livez and /readyz on over HTTPS (a self-signed certificate made at start), as OCM's agents do; 0 turns it off. Default: :8443 when started as OCM's work agent is (ferry-agent agent ...), else off.")
	fs.StringVar(&o.TLSMinVersion, flagTLSMinVersion, o.TLSMinVersion,
		"Minimum TLS version of the --listen server: VersionTLS12 or VersionTLS13. Default: VersionTLS12.")
	fs.StringSliceVar(&o.TLSCipherSuites, flagTLSCipherSuites, o.TLSCipherSuites,
		"Cipher suites of the --listen server up to TLS 1.2, by their Go names. Default: Go's.")
	fs.StringVar(&o.ExecutorMode, flagExecutorMode, o.ExecutorMode,
		"How a ManifestWork's spec.executor is held to the ServiceAccount's permissions: check (as OCM's agent: SubjectAccessReviews before each manifest, applied with the agent's rights) or impersonate (applied, pruned and deleted as the ServiceAccount: the API server enforces RBAC and admission).")
	fs.StringVar(&o.DefaultExecutor, flagDefaultExecutor, o.DefaultExecutor,
		"namespace/name of a ServiceAccount on the managed cluster that works naming no executor are held to, as if they named it. Default: none (they apply with the agent's rights).")
	fs.BoolVar(&o.SpokeEvents, flagSpokeEvents, o.SpokeEvents,
		"Record Events on the managed cluster's objects the agent acts on, where kubectl describe shows them: "+agent.EventDriftReverted+" (changed on the cluster, put back: by which field manager, which fields), "+
			agent.EventApplyFailed+", "+agent.EventExecutorDenied+", "+agent.EventDeleted+", "+agent.EventEvicted+" and "+agent.EventOrphaned+". Only when the agent acts or a failure is new, never at a resync that changes nothing; false records none.")
	fs.StringSliceVar(&o.CloudEventsClientCodecs, flagCloudEventsClientCodec, o.CloudEventsClientCodecs,
		"Accepted as OCM's work agent accepts it (manifest, manifestbundle); ManifestWorks travel with the manifestbundles codec whatever it says, as with OCM's agent.")
	fs.IntVar(&o.HealthPort, flagHealthPort, o.HealthPort,
		"Port of the --"+flagListen+" server on every address (:<port>), as the klusterlet passes it for a health check port other than 8443. Give this or --"+flagListen+".")
	fs.StringVar(&o.Kubeconfig, flagKubeconfig, o.Kubeconfig,
		"OCM's name for --"+flagSpokeKubeconfig+" when that is not given: the managed cluster's kubeconfig file.")
	fs.StringVar(&o.ClusterName, flagClusterName, o.ClusterName,
		"OCM's other name for --"+flagSpokeClusterName+".")
	fs.StringVar(&o.Namespace, flagNamespace, o.Namespace,
		"Namespace the agent runs in, as OCM's agent takes it: the leader-election Lease's when --"+flagLeaderElectionNamespace+" is not given.")
	fs.Int32Var(&o.MaxFeedbackWatch, flagMaxFeedbackWatch, o.MaxFeedbackWatch,
		"Accepted for OCM compatibility and changes nothing: OCM's agent watches at most this many resources with feedback rules and polls the rest; ferry-agent watches every kind it applied.")
	fs.IntVarP(&o.Verbosity, flagVerbosity, "v", o.Verbosity,
		"Log verbosity: 0 logs what an operator acts on, higher adds detail (as klog's -v).")
	fs.StringVar(&o.VModule, flagVModule, o.VModule,
		"Log verbosity per source file, pattern=N,... (as klog's --vmodule).")
	fs.DurationVar(&o.LogFlushFrequency, flagLogFlushFrequency, o.LogFlushFrequency,
		"Accepted for OCM compatibility and changes nothing: ferry-agent writes each log line as it happens.")
}
