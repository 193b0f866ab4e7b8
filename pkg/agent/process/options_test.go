package process

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
)

func TestNewOptionsDefaults(t *testing.T) {
	o := NewOptions()
	want := Options{
		KubeAPIQPS:                             2000,
		KubeAPIBurst:                           4000,
		HubKubeAPIQPS:                          200,
		HubKubeAPIBurst:                        400,
		StatusSyncInterval:                     10 * time.Second,
		Workers:                                10,
		MetricsBindAddress:                     ":8080",
		HealthProbeBindAddress:                 ":8081",
		PprofBindAddress:                       "0",
		WorkloadSourceDriver:                   "kube",
		MaxJSONRawLength:                       1024,
		MaxCustomClusterClaims:                 20,
		AppliedManifestWorkEvictionGracePeriod: time.Hour,
		LeaderElectionLeaseDuration:            15 * time.Second,
		LeaderElectionRenewDeadline:            10 * time.Second,
		LeaderElectionRetryPeriod:              2 * time.Second,
		ExecutorMode:                           "check",
		SpokeEvents:                            true,
	}
	if !reflect.DeepEqual(*o, want) {
		t.Errorf("NewOptions() = %+v\nwant          %+v", *o, want)
	}
	// The flags show the same defaults.
	fs := pflag.NewFlagSet("ferry-agent", pflag.ContinueOnError)
	o.AddFlags(fs)
	for name, def := range map[string]string{
		"kube-api-qps": "2000", "kube-api-burst": "4000", "hub-kube-api-qps": "200", "hub-kube-api-burst": "400",
		"status-sync-interval": "10s", "workers": "10", "metrics-bind-address": ":8080",
		"health-probe-bind-address": ":8081", "pprof-bind-address": "0", "spoke-cluster-name": "", "hub-kubeconfig": "",
		"hub-kubeconfig-dir": "", "spoke-kubeconfig": "", "agent-id": "",
		"workload-source-driver": "kube", "workload-source-config": "", "max-json-raw-length": "1024",
		"appliedmanifestwork-eviction-grace-period": "1h0m0s", "terminate-on-files": "[]", "disable-leader-election": "false",
		"leader-election-namespace": "", "leader-election-lease-duration": "15s", "leader-election-renew-deadline": "10s",
		"leader-election-retry-period": "2s", "spoke-events": "true",
	} {
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("no flag --%s", name)
			continue
		}
		if f.DefValue != def {
			t.Errorf("--%s default %q, want %q", name, f.DefValue, def)
		}
	}
}

func TestAddFlagsParsesEveryFlag(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("ferry-agent", pflag.ContinueOnError)
	o.AddFlags(fs)
	err := fs.Parse([]string{
		"--spoke-cluster-name=cluster1",
		"--hub-kubeconfig=/etc/hub/kubeconfig",
		"--hub-kubeconfig-dir=/spoke/hub-kubeconfig",
		"--spoke-kubeconfig=/etc/spoke/kubeconfig",
		"--agent-id=agent-7",
		"--kube-api-qps=123.5",
		"--kube-api-burst=456",
		"--hub-kube-api-qps=7.25",
		"--hub-kube-api-burst=9",
		"--status-sync-interval=1m30s",
		"--workers=3",
		"--metrics-bind-address=127.0.0.1:9090",
		"--health-probe-bind-address=0",
		"--pprof-bind-address=127.0.0.1:6060",
		"--workload-source-driver=kube",
		"--workload-source-config=/spoke/hub-kubeconfig/kubeconfig",
		"--terminate-on-files=/a",
		"--terminate-on-files=/b",
		"--max-json-raw-length=2048",
		"--appliedmanifestwork-eviction-grace-period=10m",
		"--disable-leader-election",
		"--leader-election-namespace=agents",
		"--leader-election-lease-duration=30s",
		"--leader-election-renew-deadline=20s",
		"--leader-election-retry-period=4s",
		"--cloudevents-client-id=x",
		"--cloudevents-client-codecs=manifest,manifestbundle",
		"--executor-mode=impersonate",
		"--default-executor=apps/deployer",
		"--health-port=9443",
		"--kubeconfig=/etc/kubeconfig",
		"--cluster-name=cluster1",
		"--namespace=klusterlet",
		"--max-feedback-watch=80",
		"--max-custom-cluster-claims=5",
		"-v=4",
		"--vmodule=controller=5",
		"--log-flush-frequency=3s",
		"--spoke-events=false",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Options{
		SpokeClusterName:                       "cluster1",
		HubKubeconfig:                          "/etc/hub/kubeconfig",
		HubKubeconfigDir:                       "/spoke/hub-kubeconfig",
		SpokeKubeconfig:                        "/etc/spoke/kubeconfig",
		AgentID:                                "agent-7",
		KubeAPIQPS:                             123.5,
		KubeAPIBurst:                           456,
		HubKubeAPIQPS:                          7.25,
		HubKubeAPIBurst:                        9,
		StatusSyncInterval:                     90 * time.Second,
		Workers:                                3,
		MetricsBindAddress:                     "127.0.0.1:9090",
		HealthProbeBindAddress:                 "0",
		PprofBindAddress:                       "127.0.0.1:6060",
		WorkloadSourceDriver:                   "kube",
		WorkloadSourceConfig:                   "/spoke/hub-kubeconfig/kubeconfig",
		TerminateOnFiles:                       []string{"/a", "/b"},
		MaxJSONRawLength:                       2048,
		MaxCustomClusterClaims:                 5,
		AppliedManifestWorkEvictionGracePeriod: 10 * time.Minute,
		DisableLeaderElection:                  true,
		LeaderElectionNamespace:                "agents",
		LeaderElectionLeaseDuration:            30 * time.Second,
		LeaderElectionRenewDeadline:            20 * time.Second,
		LeaderElectionRetryPeriod:              4 * time.Second,
		CloudEventsClientID:                    "x",
		CloudEventsClientCodecs:                []string{"manifest", "manifestbundle"},
		ExecutorMode:                           "impersonate",
		DefaultExecutor:                        "apps/deployer",
		HealthPort:                             9443,
		Kubeconfig:                             "/etc/kubeconfig",
		ClusterName:                            "cluster1",
		Namespace:                              "klusterlet",
		MaxFeedbackWatch:                       80,
		Verbosity:                              4,
		VModule:                                "controller=5",
		LogFlushFrequency:                      3 * time.Second,
	}
	if !reflect.DeepEqual(*o, want) {
		t.Errorf("parsed %+v\nwant   %+v", *o, want)
	}
}

// writeOptFile writes content to dir/name and returns the path.
func writeOptFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// testCertKey is a self-signed certificate and its key, made once: RSA key generation is slow.
var testCertKey = sync.OnceValues(func() ([2][]byte, error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("ferry-agent-test", nil, nil)
	return [2][]byte{certPEM, keyPEM}, err
})

// writeCertKey writes a certificate and its key as tls.crt and tls.key in dir.
func writeCertKey(t *testing.T, dir string) {
	t.Helper()
	pair, err := testCertKey()
	if err != nil {
		t.Fatal(err)
	}
	writeOptFile(t, dir, TLSCertFile, string(pair[0]))
	writeOptFile(t, dir, TLSKeyFile, string(pair[1]))
}

// writeDirKubeconfig writes dir/kubeconfig as the OCM registration agent does: the CA given here, the
// client certificate and key as the relative paths tls.crt and tls.key.
func writeDirKubeconfig(t *testing.T, dir, server string, ca clientcmdapi.Cluster) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	ca.Server = server
	kc.Clusters["default-cluster"] = &ca
	kc.AuthInfos["default-auth"] = &clientcmdapi.AuthInfo{ClientCertificate: TLSCertFile, ClientKey: TLSKeyFile}
	kc.Contexts["default-context"] = &clientcmdapi.Context{Cluster: "default-cluster", AuthInfo: "default-auth"}
	kc.CurrentContext = "default-context"
	if err := clientcmd.WriteToFile(*kc, filepath.Join(dir, KubeconfigFile)); err != nil {
		t.Fatal(err)
	}
}

// hubDir makes a hub kubeconfig directory with every file of the clusteradm layout.
func hubDir(t *testing.T, clusterName string) string {
	t.Helper()
	dir := t.TempDir()
	writeCertKey(t, dir)
	writeDirKubeconfig(t, dir, "https://hub.example:6443", clientcmdapi.Cluster{InsecureSkipTLSVerify: true})
	if clusterName != "" {
		writeOptFile(t, dir, ClusterNameFile, clusterName)
	}
	return dir
}

// completed parses args into fresh Options and completes them.
func completed(t *testing.T, args ...string) *Options {
	t.Helper()
	o := NewOptions()
	fs := pflag.NewFlagSet("ferry-agent", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	if err := o.Complete(); err != nil {
		t.Fatalf("complete %q: %v", args, err)
	}
	return o
}

func TestCompleteReadsClusterAndAgentNameFromDir(t *testing.T) {
	dir := hubDir(t, "cluster1\n") // a file written with a trailing newline still names cluster1
	writeOptFile(t, dir, AgentNameFile, "agent-x")
	o := completed(t, "--hub-kubeconfig-dir", dir)
	if o.SpokeClusterName != "cluster1" {
		t.Errorf("SpokeClusterName = %q, want cluster1 from %s", o.SpokeClusterName, ClusterNameFile)
	}
	if o.AgentID != "agent-x" {
		t.Errorf("AgentID = %q, want agent-x from %s", o.AgentID, AgentNameFile)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestCompleteFlagBeatsFile(t *testing.T) {
	dir := hubDir(t, "from-file")
	writeOptFile(t, dir, AgentNameFile, "agent-from-file")
	o := completed(t, "--hub-kubeconfig-dir", dir, "--spoke-cluster-name", "from-flag", "--agent-id", "agent-from-flag")
	if o.SpokeClusterName != "from-flag" || o.AgentID != "agent-from-flag" {
		t.Errorf("SpokeClusterName, AgentID = %q, %q; want the flags' from-flag, agent-from-flag", o.SpokeClusterName, o.AgentID)
	}
}

func TestCompleteWithoutNameFiles(t *testing.T) {
	o := completed(t, "--hub-kubeconfig-dir", hubDir(t, ""))
	if o.SpokeClusterName != "" || o.AgentID != "" {
		t.Errorf("SpokeClusterName, AgentID = %q, %q; want both empty", o.SpokeClusterName, o.AgentID)
	}
}

func TestCompleteUnreadableClusterNameFile(t *testing.T) {
	dir := hubDir(t, "")
	if err := os.Mkdir(filepath.Join(dir, ClusterNameFile), 0o700); err != nil { // a directory cannot be read as a file
		t.Fatal(err)
	}
	o := NewOptions()
	o.HubKubeconfigDir = dir
	err := o.Complete()
	want := "--hub-kubeconfig-dir " + dir + ": cannot read cluster-name: is a directory"
	if err == nil || err.Error() != want {
		t.Errorf("Complete() = %v, want %q", err, want)
	}
}

func TestValidateErrors(t *testing.T) {
	good := hubDir(t, "cluster1")
	noKubeconfig := t.TempDir()
	writeOptFile(t, noKubeconfig, ClusterNameFile, "cluster1")
	noName := hubDir(t, "")
	badName := hubDir(t, "Bad.Name")
	plainFile := writeOptFile(t, t.TempDir(), "plain", "x")
	kubeconfigFile := filepath.Join(good, KubeconfigFile)
	missing := filepath.Join(t.TempDir(), "missing")

	cases := []struct {
		name string
		args []string
		want string // the whole message, or its start when prefix is set
		// prefix: the rest of the message is apimachinery's wording
		prefix bool
	}{
		{"valid dir", []string{"--hub-kubeconfig-dir", good}, "", false},
		{"valid file", []string{"--hub-kubeconfig", kubeconfigFile, "--spoke-cluster-name", "c1"}, "", false},
		{"valid without rate limits or servers", []string{"--hub-kubeconfig-dir", good, "--kube-api-qps=0", "--kube-api-burst=0",
			"--hub-kube-api-qps=0", "--hub-kube-api-burst=0", "--metrics-bind-address=0", "--health-probe-bind-address=0"}, "", false},
		{"no hub kubeconfig", nil,
			"--hub-kubeconfig or --hub-kubeconfig-dir is required", false},
		{"both hub kubeconfigs", []string{"--hub-kubeconfig", kubeconfigFile, "--hub-kubeconfig-dir", good},
			"--hub-kubeconfig and --hub-kubeconfig-dir are mutually exclusive: give one", false},
		{"hub kubeconfig missing", []string{"--hub-kubeconfig", missing, "--spoke-cluster-name", "c1"},
			"--hub-kubeconfig " + missing + ": no such file", false},
		{"hub kubeconfig is a directory", []string{"--hub-kubeconfig", good, "--spoke-cluster-name", "c1"},
			"--hub-kubeconfig " + good + ": is a directory, not a file", false},
		{"dir missing", []string{"--hub-kubeconfig-dir", missing},
			"--hub-kubeconfig-dir " + missing + ": no such directory", false},
		{"dir is a file", []string{"--hub-kubeconfig-dir", plainFile},
			"--hub-kubeconfig-dir " + plainFile + ": not a directory", false},
		{"dir without kubeconfig", []string{"--hub-kubeconfig-dir", noKubeconfig},
			"--hub-kubeconfig-dir " + noKubeconfig + ": no kubeconfig file in it", false},
		{"spoke kubeconfig missing", []string{"--hub-kubeconfig-dir", good, "--spoke-kubeconfig", missing},
			"--spoke-kubeconfig " + missing + ": no such file", false},
		{"no cluster name in dir", []string{"--hub-kubeconfig-dir", noName},
			"--spoke-cluster-name is required: --hub-kubeconfig-dir " + noName + " has no cluster-name file", false},
		{"no cluster name", []string{"--hub-kubeconfig", kubeconfigFile},
			"--spoke-cluster-name is required", false},
		{"cluster name not a label", []string{"--hub-kubeconfig", kubeconfigFile, "--spoke-cluster-name", "Cluster_1"},
			`--spoke-cluster-name "Cluster_1": not a valid cluster (namespace) name: a lowercase RFC 1123 label`, true},
		{"cluster name too long", []string{"--hub-kubeconfig", kubeconfigFile, "--spoke-cluster-name", strings.Repeat("a", 64)},
			`--spoke-cluster-name "` + strings.Repeat("a", 64) + `": not a valid cluster (namespace) name: must be no more than 63`, true},
		{"cluster name file not a label", []string{"--hub-kubeconfig-dir", badName},
			"--hub-kubeconfig-dir " + badName + `: cluster-name file "Bad.Name": not a valid cluster (namespace) name: `, true},
		{"negative spoke qps", []string{"--hub-kubeconfig-dir", good, "--kube-api-qps=-1"},
			"--kube-api-qps -1: must not be negative (0 turns client-side rate limiting off)", false},
		{"negative spoke burst", []string{"--hub-kubeconfig-dir", good, "--kube-api-burst=-5"},
			"--kube-api-burst -5: must not be negative", false},
		{"spoke burst 0 with a qps", []string{"--hub-kubeconfig-dir", good, "--kube-api-burst=0"},
			"--kube-api-burst 0: must be at least 1 when --kube-api-qps is not 0", false},
		{"negative hub qps", []string{"--hub-kubeconfig-dir", good, "--hub-kube-api-qps=-0.5"},
			"--hub-kube-api-qps -0.5: must not be negative (0 turns client-side rate limiting off)", false},
		{"negative hub burst", []string{"--hub-kubeconfig-dir", good, "--hub-kube-api-burst=-1"},
			"--hub-kube-api-burst -1: must not be negative", false},
		{"hub burst 0 with a qps", []string{"--hub-kubeconfig-dir", good, "--hub-kube-api-qps=10", "--hub-kube-api-burst=0"},
			"--hub-kube-api-burst 0: must be at least 1 when --hub-kube-api-qps is not 0", false},
		{"zero status sync interval", []string{"--hub-kubeconfig-dir", good, "--status-sync-interval=0"},
			"--status-sync-interval 0s: must be positive", false},
		{"zero workers", []string{"--hub-kubeconfig-dir", good, "--workers=0"},
			"--workers 0: must be at least 1", false},
		{"negative workers", []string{"--hub-kubeconfig-dir", good, "--workers=-2"},
			"--workers -2: must be at least 1", false},
		{"metrics address without port", []string{"--hub-kubeconfig-dir", good, "--metrics-bind-address=8080"},
			`--metrics-bind-address "8080": want host:port (e.g. :8080), or 0 to turn it off`, false},
		{"health address with empty port", []string{"--hub-kubeconfig-dir", good, "--health-probe-bind-address=localhost:"},
			`--health-probe-bind-address "localhost:": want host:port (e.g. :8080), or 0 to turn it off`, false},
		{"lease duration not above renew deadline", []string{"--hub-kubeconfig-dir", good, "--leader-election-lease-duration=10s"},
			"--leader-election-lease-duration 10s: must be more than --leader-election-renew-deadline (10s)", false},
		{"renew deadline not above retry period", []string{"--hub-kubeconfig-dir", good, "--leader-election-renew-deadline=2s"},
			"--leader-election-renew-deadline 2s: must be more than 1.2 times --leader-election-retry-period (2s)", false},
		{"zero retry period", []string{"--hub-kubeconfig-dir", good, "--leader-election-retry-period=0"},
			"--leader-election-retry-period 0s: must be positive", false},
		{"timings ignored without leader election", []string{"--hub-kubeconfig-dir", good, "--disable-leader-election", "--leader-election-retry-period=0"}, "", false},
		{"unknown executor mode", []string{"--hub-kubeconfig-dir", good, "--executor-mode=trust"},
			`--executor-mode "trust": must be check or impersonate`, false},
		{"impersonate", []string{"--hub-kubeconfig-dir", good, "--executor-mode=impersonate", "--default-executor=apps/deployer"}, "", false},
		{"default executor without a namespace", []string{"--hub-kubeconfig-dir", good, "--default-executor=deployer"},
			`--default-executor "deployer": want namespace/name of a ServiceAccount on the managed cluster`, false},
		{"default executor with a bad namespace", []string{"--hub-kubeconfig-dir", good, "--default-executor=Apps/deployer"},
			`--default-executor "Apps/deployer": want namespace/name of a ServiceAccount on the managed cluster`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			err := completed(t, tc.args...).Validate()
			switch {
			case want == "" && err != nil:
				t.Fatalf("Validate() = %v, want no error", err)
			case want == "":
				return
			case err == nil:
				t.Fatalf("Validate() = nil, want %q", want)
			case strings.Contains(err.Error(), "\n"):
				t.Errorf("error is more than one line: %q", err)
			}
			if got := err.Error(); tc.prefix && !strings.HasPrefix(got, want) || !tc.prefix && got != want {
				t.Errorf("Validate() =\n  %q\nwant\n  %q (prefix: %v)", got, want, tc.prefix)
			}
		})
	}
}

func TestHubConfigResolvesRelativePathsInDir(t *testing.T) {
	dir := hubDir(t, "cluster1")
	pair, err := testCertKey()
	if err != nil {
		t.Fatal(err)
	}
	writeOptFile(t, dir, "ca.crt", string(pair[0]))
	writeDirKubeconfig(t, dir, "https://hub.example:6443", clientcmdapi.Cluster{CertificateAuthority: "ca.crt"})

	// Name the directory relative to a working directory that is neither it nor its parent, and move
	// away afterwards: the paths in the kubeconfig resolve against the kubeconfig's directory.
	t.Chdir(filepath.Dir(dir))
	o := completed(t, "--hub-kubeconfig-dir", filepath.Base(dir))
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())

	cfg, err := o.HubConfig()
	if err != nil {
		t.Fatal(err)
	}
	for what, got := range map[string][2]string{
		"CertFile": {cfg.CertFile, filepath.Join(dir, TLSCertFile)},
		"KeyFile":  {cfg.KeyFile, filepath.Join(dir, TLSKeyFile)},
		"CAFile":   {cfg.CAFile, filepath.Join(dir, "ca.crt")},
	} {
		if got[0] != got[1] {
			t.Errorf("%s = %q, want %q", what, got[0], got[1])
		}
	}
	// Kept as file references, so that client-go reloads rotated files.
	if len(cfg.CertData) != 0 || len(cfg.KeyData) != 0 {
		t.Errorf("client certificate or key inlined into the rest.Config")
	}
	// The files are really found: client-go builds its TLS configuration from them.
	if _, err := rest.TLSConfigFor(cfg); err != nil {
		t.Errorf("TLS configuration from the resolved files: %v", err)
	}
	if cfg.Host != "https://hub.example:6443" || cfg.QPS != 200 || cfg.Burst != 400 {
		t.Errorf("Host, QPS, Burst = %s, %g, %d; want https://hub.example:6443, 200, 400", cfg.Host, cfg.QPS, cfg.Burst)
	}
	if !strings.HasPrefix(cfg.UserAgent, "ferry-agent/") || !strings.HasSuffix(cfg.UserAgent, " hub") {
		t.Errorf("UserAgent = %q, want ferry-agent/<version> (...) hub", cfg.UserAgent)
	}
	if got, want := o.HubWatchPaths(), []string{filepath.Join(dir, KubeconfigFile), filepath.Join(dir, "ca.crt")}; !slices.Equal(got, want) {
		t.Errorf("HubWatchPaths() = %q, want %q", got, want)
	}
}

func TestHubWatchPathsInlineCA(t *testing.T) {
	dir := hubDir(t, "cluster1")
	writeDirKubeconfig(t, dir, "https://hub.example:6443", clientcmdapi.Cluster{CertificateAuthorityData: []byte("ca")})
	o := completed(t, "--hub-kubeconfig-dir", dir)
	if got, want := o.HubWatchPaths(), []string{filepath.Join(dir, KubeconfigFile)}; !slices.Equal(got, want) {
		t.Errorf("HubWatchPaths() = %q, want %q", got, want)
	}
}

func TestHubConfigErrors(t *testing.T) {
	t.Run("missing kubeconfig", func(t *testing.T) {
		dir := t.TempDir()
		o := completed(t, "--hub-kubeconfig-dir", dir)
		_, err := o.HubConfig()
		want := "hub kubeconfig " + filepath.Join(dir, KubeconfigFile) + " (--hub-kubeconfig-dir): no such file"
		if err == nil || err.Error() != want {
			t.Errorf("HubConfig() error = %v, want %q", err, want)
		}
	})
	t.Run("empty kubeconfig", func(t *testing.T) {
		p := writeOptFile(t, t.TempDir(), "kubeconfig", "")
		_, err := completed(t, "--hub-kubeconfig", p).HubConfig()
		want := "hub kubeconfig " + p + " (--hub-kubeconfig): no cluster, user or context in it"
		if err == nil || err.Error() != want {
			t.Errorf("HubConfig() error = %v, want %q", err, want)
		}
	})
	t.Run("not YAML", func(t *testing.T) {
		p := writeOptFile(t, t.TempDir(), "kubeconfig", "clusters: [\n  - {\n")
		_, err := completed(t, "--hub-kubeconfig", p).HubConfig()
		if err == nil || !strings.HasPrefix(err.Error(), "hub kubeconfig "+p+" (--hub-kubeconfig): ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("HubConfig() error = %q, want one line naming %s", err, p)
		}
	})
	t.Run("certificate file missing", func(t *testing.T) {
		dir := hubDir(t, "cluster1")
		if err := os.Remove(filepath.Join(dir, TLSCertFile)); err != nil {
			t.Fatal(err)
		}
		_, err := completed(t, "--hub-kubeconfig-dir", dir).HubConfig()
		if err == nil || !strings.HasPrefix(err.Error(), "hub kubeconfig "+filepath.Join(dir, KubeconfigFile)+" (--hub-kubeconfig-dir): ") ||
			!strings.Contains(err.Error(), filepath.Join(dir, TLSCertFile)) || strings.Contains(err.Error(), "\n") {
			t.Errorf("HubConfig() error = %q, want one line naming the kubeconfig and the missing %s", err, TLSCertFile)
		}
	})
}

func TestSpokeConfig(t *testing.T) {
	dir := hubDir(t, "") // any valid kubeconfig will do
	kubeconfig := filepath.Join(dir, KubeconfigFile)
	// Not in a cluster, whatever machine runs the test.
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")

	t.Run("--spoke-kubeconfig", func(t *testing.T) {
		t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "not-this-one"))
		cfg, err := completed(t, "--spoke-kubeconfig", kubeconfig, "--kube-api-qps=300", "--kube-api-burst=600").SpokeConfig()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Host != "https://hub.example:6443" || cfg.QPS != 300 || cfg.Burst != 600 || !strings.HasSuffix(cfg.UserAgent, " spoke") {
			t.Errorf("Host, QPS, Burst, UserAgent = %s, %g, %d, %q", cfg.Host, cfg.QPS, cfg.Burst, cfg.UserAgent)
		}
	})
	t.Run("$KUBECONFIG outside a cluster", func(t *testing.T) {
		t.Setenv("KUBECONFIG", kubeconfig)
		cfg, err := completed(t, "--kube-api-qps=0").SpokeConfig()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Host != "https://hub.example:6443" {
			t.Errorf("Host = %s, want the server of $KUBECONFIG", cfg.Host)
		}
		if cfg.QPS >= 0 {
			t.Errorf("QPS = %g: --kube-api-qps=0 must turn client-side rate limiting off (a negative QPS), not leave client-go's default of 5", cfg.QPS)
		}
	})
	t.Run("nothing to load", func(t *testing.T) {
		t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "absent"))
		_, err := completed(t).SpokeConfig()
		want := "spoke: no --spoke-kubeconfig, not running in a cluster, and no usable kubeconfig in $KUBECONFIG or "
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("SpokeConfig() error = %v, want one line starting %q", err, want)
		}
	})
	t.Run("broken --spoke-kubeconfig", func(t *testing.T) {
		p := writeOptFile(t, t.TempDir(), "kubeconfig", "")
		_, err := completed(t, "--spoke-kubeconfig", p).SpokeConfig()
		want := "spoke kubeconfig " + p + " (--spoke-kubeconfig): no cluster, user or context in it"
		if err == nil || err.Error() != want {
			t.Errorf("SpokeConfig() error = %v, want %q", err, want)
		}
	})
}

// The work agent command line an OCM klusterlet writes runs ferry-agent unchanged: the hub kubeconfig
// comes from --workload-source-config.
func TestKlusterletWorkAgentArgsAreAccepted(t *testing.T) {
	dir := hubDir(t, "")
	o := completed(t,
		"--spoke-cluster-name=cluster1",
		"--workload-source-driver=kube",
		"--workload-source-config="+filepath.Join(dir, KubeconfigFile),
		"--agent-id=",
		"--terminate-on-files="+filepath.Join(dir, KubeconfigFile),
		"--status-sync-interval=60s",
		"--kube-api-qps=20",
		"--kube-api-burst=50",
		"--feature-gates=RawFeedbackJsonString=true",
	)
	if err := o.Validate(); err != nil {
		t.Fatalf("klusterlet args refused: %v", err)
	}
	if o.HubKubeconfig != filepath.Join(dir, KubeconfigFile) || o.SpokeClusterName != "cluster1" || !o.FeatureGates[FeatureRawFeedbackJSONString] {
		t.Errorf("hub kubeconfig %q, cluster %q, gates %v", o.HubKubeconfig, o.SpokeClusterName, o.FeatureGates)
	}
	if _, err := o.HubConfig(); err != nil {
		t.Errorf("hub config from --workload-source-config: %v", err)
	}
}

// The klusterlet's command line over gRPC (no hub kubeconfig, the source's config.yaml, a client ID)
// validates; the client ID defaults to the klusterlet's; a driver OCM's agent does not have, a missing
// or absent config file, or a codec OCM does not know is one line naming the flag.
func TestCloudEventsCommandLines(t *testing.T) {
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte("url: hub.example:8090\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := completed(t, "--spoke-cluster-name=cluster1", "--workload-source-driver=grpc", "--workload-source-config="+config,
		"--cloudevents-client-id=cluster1-work-agent", "--agent-id=a1")
	if err := o.Validate(); err != nil {
		t.Errorf("the klusterlet's grpc command line: %v", err)
	}
	if got := o.HubWatchPaths(); len(got) != 1 || got[0] != config {
		t.Errorf("watched for a new connection: %v; want the source's config %s", got, config)
	}
	o = completed(t, "--spoke-cluster-name=cluster1", "--workload-source-driver=mqtt", "--workload-source-config="+config)
	if err := o.Validate(); err != nil || o.CloudEventsClientID != "cluster1-work-agent" {
		t.Errorf("mqtt without a client ID: %v, client ID %q; want it valid, as cluster1-work-agent", err, o.CloudEventsClientID)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload-source-driver=kafka", "--hub-kubeconfig=" + config}, `--workload-source-driver "kafka": want kube, grpc or mqtt`},
		{[]string{"--workload-source-driver=grpc"}, "--workload-source-driver=grpc needs --workload-source-config"},
		{[]string{"--workload-source-driver=grpc", "--workload-source-config=" + config + ".missing"}, "--workload-source-config " + config + ".missing"},
		{[]string{"--workload-source-driver=mqtt", "--workload-source-config=" + config, "--cloudevents-client-codecs=manifests"}, `--cloudevents-client-codecs "manifests"`},
		{[]string{"--workload-source-driver=kube", "--workload-source-config=" + config + ".missing"}, "--hub-kubeconfig"},
	} {
		o := completed(t, append([]string{"--spoke-cluster-name=cluster1"}, c.args...)...)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want an error with %q", c.args, err, c.want)
		}
	}
}

func TestWorkloadSourceErrors(t *testing.T) {
	dir := hubDir(t, "cluster1")
	kubeconfig := filepath.Join(dir, KubeconfigFile)
	o := NewOptions()
	fs := pflag.NewFlagSet("ferry-agent", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--hub-kubeconfig=" + kubeconfig, "--workload-source-config=/elsewhere/kubeconfig"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Complete(); err == nil || !strings.Contains(err.Error(), "different hub kubeconfigs") {
		t.Errorf("two hub kubeconfigs: %v, want an error", err)
	}
	o = NewOptions()
	fs = pflag.NewFlagSet("ferry-agent", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--feature-gates=RawFeedbackJsonString=maybe"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Complete(); err == nil || !strings.Contains(err.Error(), "--feature-gates RawFeedbackJsonString=maybe") {
		t.Errorf("bad gate value: %v, want an error naming it", err)
	}
}

// The Lease's namespace: the flag, else POD_NAMESPACE (the Deployment sets it from the pod), else the
// in-cluster service account's namespace, else the klusterlet's agent namespace.
func TestLeaderElectionNamespaceDefaults(t *testing.T) {
	noFile := func(string) ([]byte, error) { return nil, os.ErrNotExist }
	saFile := func(path string) ([]byte, error) {
		if path != serviceAccountNamespaceFile {
			t.Errorf("read %s, want %s", path, serviceAccountNamespaceFile)
		}
		return []byte("from-sa\n"), nil
	}
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	for _, tc := range []struct {
		name     string
		getenv   func(string) string
		readFile func(string) ([]byte, error)
		want     string
	}{
		{"POD_NAMESPACE", env(map[string]string{"POD_NAMESPACE": "from-env"}), saFile, "from-env"},
		{"service account", env(nil), saFile, "from-sa"},
		{"blank POD_NAMESPACE", env(map[string]string{"POD_NAMESPACE": " "}), saFile, "from-sa"},
		{"neither", env(nil), noFile, "open-cluster-management-agent"},
	} {
		if got := defaultLeaderElectionNamespace(tc.getenv, tc.readFile); got != tc.want {
			t.Errorf("%s: namespace %q, want %q", tc.name, got, tc.want)
		}
	}

	// Complete fills it in, and a flag beats it.
	t.Setenv("POD_NAMESPACE", "agents")
	if o := completed(t, "--hub-kubeconfig-dir", hubDir(t, "cluster1")); o.LeaderElectionNamespace != "agents" {
		t.Errorf("Complete: namespace %q, want POD_NAMESPACE's agents", o.LeaderElectionNamespace)
	}
	if o := completed(t, "--hub-kubeconfig-dir", hubDir(t, "cluster1"), "--leader-election-namespace=kube-system"); o.LeaderElectionNamespace != "kube-system" {
		t.Errorf("Complete: namespace %q, want the flag's kube-system", o.LeaderElectionNamespace)
	}
}

// The identity: POD_NAME, else the host name, and a random suffix, so that two processes (or a restarted
// container of one pod) are different candidates.
func TestLeaderElectionIdentity(t *testing.T) {
	host := func() (string, error) { return "node-1", nil }
	pod := func(k string) string {
		if k == "POD_NAME" {
			return "ferry-agent-5d9f-x2"
		}
		return ""
	}
	a, err := leaderElectionIdentity(pod, host)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := leaderElectionIdentity(pod, host)
	if !strings.HasPrefix(a, "ferry-agent-5d9f-x2_") || len(a) <= len("ferry-agent-5d9f-x2_") {
		t.Errorf("identity %q, want POD_NAME, _ and a suffix", a)
	}
	if a == b {
		t.Errorf("two identities of one pod are both %q; want them to differ", a)
	}
	c, err := leaderElectionIdentity(func(string) string { return "" }, host)
	if err != nil || !strings.HasPrefix(c, "node-1_") {
		t.Errorf("identity without POD_NAME %q (%v), want the host name, _ and a suffix", c, err)
	}
	if _, err := leaderElectionIdentity(func(string) string { return "" }, func() (string, error) { return "", os.ErrPermission }); err == nil {
		t.Errorf("identity without POD_NAME or host name: no error")
	}
}

// Started with OCM's work agent command line (as the klusterlet starts it), the agent serves its health
// where the klusterlet's probes look, over HTTPS on :8443; started as Ferry's own, not unless asked.
func TestOCMCommandLineListensWhereTheKlusterletProbes(t *testing.T) {
	dir := hubDir(t, "cluster1")
	o := NewOptions()
	fs := pflag.NewFlagSet("ferry-agent", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--hub-kubeconfig-dir", dir}); err != nil {
		t.Fatal(err)
	}
	o.OCMCommandLine = true
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if o.Listen != ":8443" {
		t.Errorf("Listen = %q with OCM's command line, want :8443", o.Listen)
	}
	if own := completed(t, "--hub-kubeconfig-dir", dir); own.Listen != "" {
		t.Errorf("Listen = %q with Ferry's command line, want none", own.Listen)
	}
	if set := completed(t, "--hub-kubeconfig-dir", dir, "--listen=0"); set.Listen != "0" {
		t.Errorf("Listen = %q with --listen=0, want it kept", set.Listen)
	}
}

// The rest of OCM's work agent command line: the newer klusterlet templates' --health-port for a health
// check port other than 8443, and the library-go controller command's --kubeconfig, --cluster-name and
// --namespace, taken as OCM's agent takes them; two flags that disagree are refused.
func TestOCMsOtherSpellingsAreTaken(t *testing.T) {
	dir := hubDir(t, "")
	o := NewOptions()
	fs := pflag.NewFlagSet("ferry-agent", pflag.ContinueOnError)
	o.AddFlags(fs)
	spokeKubeconfig := filepath.Join(dir, KubeconfigFile) // any readable kubeconfig
	if err := fs.Parse([]string{"--hub-kubeconfig-dir", dir, "--health-port=9443", "--kubeconfig=" + spokeKubeconfig,
		"--cluster-name=cluster1", "--namespace=klusterlet"}); err != nil {
		t.Fatal(err)
	}
	o.OCMCommandLine = true
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.Listen != ":9443" || o.SpokeKubeconfig != spokeKubeconfig || o.SpokeClusterName != "cluster1" || o.LeaderElectionNamespace != "klusterlet" {
		t.Errorf("listen %q, spoke kubeconfig %q, cluster %q, lease namespace %q; want :9443, %s, cluster1, klusterlet",
			o.Listen, o.SpokeKubeconfig, o.SpokeClusterName, o.LeaderElectionNamespace, spokeKubeconfig)
	}
	if own := completed(t, "--hub-kubeconfig-dir", dir, "--spoke-cluster-name=c", "--spoke-kubeconfig=/a", "--kubeconfig=/b",
		"--leader-election-namespace=x", "--namespace=y"); own.SpokeKubeconfig != "/a" || own.LeaderElectionNamespace != "x" {
		t.Errorf("Ferry's own flags beside OCM's: spoke kubeconfig %q, lease namespace %q; want /a and x", own.SpokeKubeconfig, own.LeaderElectionNamespace)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--health-port=9443", "--listen=:8443"}, "both say where to serve health"},
		{[]string{"--health-port=70000"}, "--health-port 70000: want a port"},
		{[]string{"--cluster-name=a", "--spoke-cluster-name=b"}, "name different clusters"},
	} {
		o := NewOptions()
		fs := pflag.NewFlagSet("ferry-agent", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(append([]string{"--hub-kubeconfig-dir", dir}, c.args...)); err != nil {
			t.Fatal(err)
		}
		if err := o.Complete(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q", c.args, err, c.want)
		}
	}
}
