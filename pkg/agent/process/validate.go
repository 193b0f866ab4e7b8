package process

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/agent"
)

// Complete fills in what the flags left out: absolute paths, the leader-election namespace, and the
// cluster name and agent ID from the files of --hub-kubeconfig-dir when their flags are empty. A flag
// always beats a file. A missing file is not an error here; Validate reports a missing cluster name.
func (o *Options) Complete() error {
	var err error
	if o.HealthPort < 0 || o.HealthPort > 65535 {
		return fmt.Errorf("--%s %d: want a port, 1 to 65535", flagHealthPort, o.HealthPort)
	}
	if o.HealthPort != 0 {
		if o.Listen != "" {
			return fmt.Errorf("--%s %d and --%s %s both say where to serve health: give one", flagHealthPort, o.HealthPort, flagListen, o.Listen)
		}
		o.Listen = ":" + strconv.Itoa(o.HealthPort)
	}
	if o.OCMCommandLine && o.Listen == "" {
		o.Listen = DefaultOCMListen
	}
	if o.ClusterName != "" {
		if o.SpokeClusterName != "" && o.SpokeClusterName != o.ClusterName {
			return fmt.Errorf("--%s %s and --%s %s name different clusters: give one", flagClusterName, o.ClusterName, flagSpokeClusterName, o.SpokeClusterName)
		}
		o.SpokeClusterName = o.ClusterName
	}
	if o.SpokeKubeconfig == "" {
		o.SpokeKubeconfig = o.Kubeconfig
	}
	if o.LeaderElectionNamespace == "" {
		o.LeaderElectionNamespace = o.Namespace
	}
	if o.WorkloadSourceConfig != "" && o.WorkloadSourceDriver == WorkloadSourceKube {
		if o.WorkloadSourceConfig, err = filepath.Abs(o.WorkloadSourceConfig); err != nil {
			return err
		}
		switch abs, _ := filepath.Abs(o.HubKubeconfig); {
		case o.HubKubeconfig == "":
			o.HubKubeconfig = o.WorkloadSourceConfig
		case abs != o.WorkloadSourceConfig:
			return fmt.Errorf("--%s %s and --%s %s name different hub kubeconfigs: give one", flagWorkloadSourceConfig, o.WorkloadSourceConfig, flagHubKubeconfig, o.HubKubeconfig)
		}
	}
	for name, value := range o.featureGates {
		on, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("--%s %s=%s: want true or false", flagFeatureGates, name, value)
		}
		if o.FeatureGates == nil {
			o.FeatureGates = map[string]bool{}
		}
		o.FeatureGates[name] = on
	}
	for i, p := range o.TerminateOnFiles {
		if o.TerminateOnFiles[i], err = filepath.Abs(p); err != nil {
			return err
		}
	}
	if o.LeaderElectionNamespace == "" {
		o.LeaderElectionNamespace = defaultLeaderElectionNamespace(os.Getenv, os.ReadFile)
	}
	for _, p := range []*string{&o.HubKubeconfig, &o.HubKubeconfigDir, &o.SpokeKubeconfig} {
		if *p == "" {
			continue
		}
		if *p, err = filepath.Abs(*p); err != nil {
			return err
		}
	}
	if o.cloudEvents() && o.WorkloadSourceConfig != "" {
		if o.WorkloadSourceConfig, err = filepath.Abs(o.WorkloadSourceConfig); err != nil {
			return err
		}
	}
	defer o.completeCloudEventsClientID()
	if o.HubKubeconfigDir == "" || checkDir(o.HubKubeconfigDir) != nil {
		return nil // Validate says what is wrong with the directory
	}
	if o.SpokeClusterName == "" {
		name, file, err := o.readDirFile(ClusterNameFile)
		if err != nil {
			return err
		}
		o.SpokeClusterName, o.clusterNameFile = name, file
	}
	if o.AgentID == "" {
		if o.AgentID, _, err = o.readDirFile(AgentNameFile); err != nil {
			return err
		}
	}
	return nil
}

// completeCloudEventsClientID names the agent to a cloudevents source as the klusterlet does
// (<cluster>-work-agent) when --cloudevents-client-id is not given: OCM's agent refuses to start without
// one, which a person starting it by hand learns only then.
func (o *Options) completeCloudEventsClientID() {
	if o.cloudEvents() && o.CloudEventsClientID == "" && o.SpokeClusterName != "" {
		o.CloudEventsClientID = o.SpokeClusterName + "-work-agent"
	}
}

// readDirFile returns the trimmed content of a file of HubKubeconfigDir, or "" when it does not exist.
func (o *Options) readDirFile(name string) (value, path string, err error) {
	path = filepath.Join(o.HubKubeconfigDir, name)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", "", nil
	case err != nil:
		return "", "", fmt.Errorf("--%s %s: cannot read %s: %v", flagHubKubeconfigDir, o.HubKubeconfigDir, name, unwrapPathError(err))
	}
	return strings.TrimSpace(string(data)), path, nil
}

// cloudEvents reports whether the works come from a cloudevents source (grpc, mqtt) rather than the
// hub's API server.
func (o *Options) cloudEvents() bool {
	return o.WorkloadSourceDriver == WorkloadSourceGRPC || o.WorkloadSourceDriver == WorkloadSourceMQTT
}

// Validate reports the first thing wrong with the options, as one line naming the flag.
func (o *Options) Validate() error {
	switch o.WorkloadSourceDriver {
	case WorkloadSourceKube:
	case WorkloadSourceGRPC, WorkloadSourceMQTT:
		if o.WorkloadSourceConfig == "" {
			return fmt.Errorf("--%s=%s needs --%s: the %s configuration file", flagWorkloadSourceDriver, o.WorkloadSourceDriver, flagWorkloadSourceConfig, o.WorkloadSourceDriver)
		}
		if err := checkFile(o.WorkloadSourceConfig); err != nil {
			return fmt.Errorf("--%s %s: %s", flagWorkloadSourceConfig, o.WorkloadSourceConfig, err)
		}
		for _, codec := range o.CloudEventsClientCodecs {
			if codec != "manifest" && codec != "manifestbundle" {
				return fmt.Errorf("--%s %q: want manifest or manifestbundle", flagCloudEventsClientCodec, codec)
			}
		}
	default:
		return fmt.Errorf("--%s %q: want %s, %s or %s", flagWorkloadSourceDriver, o.WorkloadSourceDriver, WorkloadSourceKube, WorkloadSourceGRPC, WorkloadSourceMQTT)
	}
	if o.Listen != "0" && o.Listen != "" {
		if err := validateBindAddress(flagListen, o.Listen); err != nil {
			return err
		}
	}
	if _, err := o.servingTLS(); err != nil {
		return err
	}
	if agent.ExecutorMode(o.ExecutorMode) != agent.ExecutorCheck && agent.ExecutorMode(o.ExecutorMode) != agent.ExecutorImpersonate {
		return fmt.Errorf("--%s %q: must be %s or %s", flagExecutorMode, o.ExecutorMode, agent.ExecutorCheck, agent.ExecutorImpersonate)
	}
	if _, err := o.defaultExecutor(); err != nil {
		return err
	}
	if o.AppliedManifestWorkEvictionGracePeriod <= 0 {
		return fmt.Errorf("--%s %s: must be positive", flagEvictionGracePeriod, o.AppliedManifestWorkEvictionGracePeriod)
	}
	if o.MaxJSONRawLength < 1 {
		return fmt.Errorf("--%s %d: must be at least 1", flagMaxJSONRawLength, o.MaxJSONRawLength)
	}
	if o.MaxCustomClusterClaims < 0 {
		return fmt.Errorf("--%s %d: must be 0 or more", flagMaxCustomClusterClaims, o.MaxCustomClusterClaims)
	}
	switch {
	case o.cloudEvents() && o.HubKubeconfig == "" && o.HubKubeconfigDir == "":
		// The works come from the source; no hub API server is read.
	case o.HubKubeconfig == "" && o.HubKubeconfigDir == "":
		return fmt.Errorf("--%s or --%s is required", flagHubKubeconfig, flagHubKubeconfigDir)
	case o.HubKubeconfig != "" && o.HubKubeconfigDir != "":
		return fmt.Errorf("--%s and --%s are mutually exclusive: give one", flagHubKubeconfig, flagHubKubeconfigDir)
	case o.HubKubeconfig != "":
		if err := checkFile(o.HubKubeconfig); err != nil {
			return fmt.Errorf("--%s %s: %s", flagHubKubeconfig, o.HubKubeconfig, err)
		}
	default:
		if err := checkDir(o.HubKubeconfigDir); err != nil {
			return fmt.Errorf("--%s %s: %s", flagHubKubeconfigDir, o.HubKubeconfigDir, err)
		}
		if err := checkFile(filepath.Join(o.HubKubeconfigDir, KubeconfigFile)); err != nil {
			if errors.Is(err, errNoSuchFile) {
				return fmt.Errorf("--%s %s: no %s file in it", flagHubKubeconfigDir, o.HubKubeconfigDir, KubeconfigFile)
			}
			return fmt.Errorf("--%s %s: %s: %s", flagHubKubeconfigDir, o.HubKubeconfigDir, KubeconfigFile, err)
		}
	}
	if o.SpokeKubeconfig != "" {
		if err := checkFile(o.SpokeKubeconfig); err != nil {
			return fmt.Errorf("--%s %s: %s", flagSpokeKubeconfig, o.SpokeKubeconfig, err)
		}
	}

	switch {
	case o.SpokeClusterName == "" && o.HubKubeconfigDir != "":
		return fmt.Errorf("--%s is required: --%s %s has no %s file", flagSpokeClusterName, flagHubKubeconfigDir, o.HubKubeconfigDir, ClusterNameFile)
	case o.SpokeClusterName == "":
		return fmt.Errorf("--%s is required", flagSpokeClusterName)
	}
	if errs := validation.IsDNS1123Label(o.SpokeClusterName); len(errs) > 0 {
		what := "--" + flagSpokeClusterName
		if o.clusterNameFile != "" {
			what = fmt.Sprintf("--%s %s: %s file", flagHubKubeconfigDir, o.HubKubeconfigDir, ClusterNameFile)
		}
		return fmt.Errorf("%s %q: not a valid cluster (namespace) name: %s", what, o.SpokeClusterName, strings.Join(errs, "; "))
	}

	if err := validateRateLimit(flagKubeAPIQPS, o.KubeAPIQPS, flagKubeAPIBurst, o.KubeAPIBurst); err != nil {
		return err
	}
	if err := validateRateLimit(flagHubKubeAPIQPS, o.HubKubeAPIQPS, flagHubKubeAPIBurst, o.HubKubeAPIBurst); err != nil {
		return err
	}
	if o.StatusSyncInterval <= 0 {
		return fmt.Errorf("--%s %s: must be positive", flagStatusSyncInterval, o.StatusSyncInterval)
	}
	if o.Workers < 1 {
		return fmt.Errorf("--%s %d: must be at least 1", flagWorkers, o.Workers)
	}
	if err := validateBindAddress(flagMetricsBindAddress, o.MetricsBindAddress); err != nil {
		return err
	}
	if err := validateBindAddress(flagHealthBindAddress, o.HealthProbeBindAddress); err != nil {
		return err
	}
	if err := validateBindAddress(flagPprofBindAddress, o.PprofBindAddress); err != nil {
		return err
	}
	return o.validateLeaderElection()
}

// defaultExecutor parses --default-executor; nil when it is not set.
func (o *Options) defaultExecutor() (*workv1.ManifestWorkSubjectServiceAccount, error) {
	if o.DefaultExecutor == "" {
		return nil, nil
	}
	namespace, name, ok := strings.Cut(o.DefaultExecutor, "/")
	if !ok || len(validation.IsDNS1123Label(namespace)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return nil, fmt.Errorf("--%s %q: want namespace/name of a ServiceAccount on the managed cluster", flagDefaultExecutor, o.DefaultExecutor)
	}
	return &workv1.ManifestWorkSubjectServiceAccount{Namespace: namespace, Name: name}, nil
}

func validateRateLimit(qpsFlag string, qps float32, burstFlag string, burst int) error {
	switch {
	case qps < 0:
		return fmt.Errorf("--%s %g: must not be negative (0 turns client-side rate limiting off)", qpsFlag, qps)
	case burst < 0:
		return fmt.Errorf("--%s %d: must not be negative", burstFlag, burst)
	case qps > 0 && burst < 1:
		return fmt.Errorf("--%s %d: must be at least 1 when --%s is not 0", burstFlag, burst, qpsFlag)
	}
	return nil
}

func validateBindAddress(flag, addr string) error {
	if addr == "0" {
		return nil
	}
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		return fmt.Errorf("--%s %q: want host:port (e.g. :8080), or 0 to turn it off", flag, addr)
	}
	return nil
}

var errNoSuchFile = errors.New("no such file")

// checkFile says, in a few words, why path is not a readable regular file.
func checkFile(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errNoSuchFile
	case err != nil:
		return unwrapPathError(err)
	case fi.IsDir():
		return errors.New("is a directory, not a file")
	}
	f, err := os.Open(path)
	if err != nil {
		return unwrapPathError(err)
	}
	return f.Close()
}

func checkDir(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("no such directory")
	case err != nil:
		return unwrapPathError(err)
	case !fi.IsDir():
		return errors.New("not a directory")
	}
	return nil
}

// unwrapPathError drops the operation and path an *os.PathError repeats, for messages that name the
// path already.
func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
