package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Result is what the benchmark measured, as --json writes it. Times are seconds, sizes bytes. A run
// that failed has Error set and the figures of the phases it got through.
type Result struct {
	Machine  Machine         `json:"machine"`
	Config   Config          `json:"config"`
	Register *RegisterResult `json:"register,omitempty"`
	Works    *WorksResult    `json:"works,omitempty"`
	Initial  *InitialResult  `json:"initialStatus,omitempty"`
	Degrade  *LagResult      `json:"degrade,omitempty"`
	Heal     *LagResult      `json:"heal,omitempty"`
	Change   *ChangeResult   `json:"componentChange,omitempty"`
	// OverrideChange is --overrides': app-0's override of region-0 changed.
	OverrideChange *ChangeResult `json:"overrideChange,omitempty"`
	Largest        *SizeResult   `json:"largestAppConfig,omitempty"`
	// RolloutSpec and Rollout are the rollout phases' (--rollout).
	RolloutSpec *RolloutSpecResult `json:"rolloutSpec,omitempty"`
	Rollout     *RolloutResult     `json:"rollout,omitempty"`
	Processes   []ProcessResult    `json:"processes,omitempty"`
	// HubRestarts are the times ferry-hub exited on its own and was started again.
	HubRestarts []RestartResult `json:"hubRestarts,omitempty"`
	// EtcdDataBytes is the size of etcd's data directory at the end (its database and WAL).
	EtcdDataBytes uint64         `json:"etcdDataBytes,omitempty"`
	Phases        []PhaseResult  `json:"phases,omitempty"`
	Targets       []TargetResult `json:"targets,omitempty"`
	Error         string         `json:"error,omitempty"`
}

// Machine is what the benchmark ran on.
type Machine struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpuModel,omitempty"`
	MemBytes uint64 `json:"memBytes,omitempty"`
	Kernel   string `json:"kernel,omitempty"`
	Go       string `json:"go"`
	// Commit is the checkout's commit (git describe --always --dirty).
	Commit string `json:"commit,omitempty"`
	// LoadAverage is /proc/loadavg's 1, 5 and 15 minute load averages when the run started and
	// ended: a load above the processes of the benchmark means something else shared the machine.
	LoadAverageStart string `json:"loadAverageStart,omitempty"`
	LoadAverageEnd   string `json:"loadAverageEnd,omitempty"`
}

// Config is what the benchmark ran with.
type Config struct {
	Clusters          int      `json:"clusters"`
	AppConfigs        int      `json:"appConfigs"`
	Works             int      `json:"works"`
	StatusRate        float64  `json:"statusRate"`
	InitialStatusRate float64  `json:"initialStatusRate"`
	LagWrites         int      `json:"lagWrites"`
	HubArgs           []string `json:"hubArgs,omitempty"`
	HubShards         int      `json:"hubShards"`
	Rollout           bool     `json:"rollout,omitempty"`
	// ClusterSets is --cluster-sets: the exclusive ManagedClusterSets the clusters are spread over;
	// 0 is the one set global. AppConfigNamespaces is --appconfig-namespaces: each AppConfig in a
	// namespace of its own. Tenancy says both in words (empty in runs from before the benchmark bound
	// sets at all).
	ClusterSets         int    `json:"clusterSets"`
	AppConfigNamespaces bool   `json:"appConfigNamespaces"`
	Tenancy             string `json:"tenancy,omitempty"`
	// Overrides is --overrides: every AppConfig with an override per region reading each cluster's
	// labels and ClusterClaim.
	Overrides bool `json:"overrides,omitempty"`
	// CPULoadCores is --cpu-load: the cores a busy loop kept busy beside the hub.
	CPULoadCores float64 `json:"cpuLoadCores,omitempty"`
}

type RegisterResult struct {
	Clusters int     `json:"clusters"`
	Seconds  float64 `json:"seconds"`
}

// WorksResult: from the first AppConfig created until the last of the N×M works was seen.
type WorksResult struct {
	Count     int     `json:"count"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"perSecond"`
	// HubWritesPerWork is ferry-hub's API writes in the phase per work written.
	HubWritesPerWork float64 `json:"hubWritesPerWork"`
}

// InitialResult: every work's first report, at the initial rate, until every summary says N/N.
type InitialResult struct {
	Writes       int     `json:"writes"`
	WriteSeconds float64 `json:"writeSeconds"`
	// SummarySeconds is from the first write until every AppConfig's summary showed every cluster
	// applied, available and healthy.
	SummarySeconds float64 `json:"summarySeconds"`
}

// LagResult: status writes at the status rate and how long each took to show in its AppConfig's
// summary.
type LagResult struct {
	Writes       int     `json:"writes"`
	WriteSeconds float64 `json:"writeSeconds"`
	// Rate is the writes a second reached: the status rate, unless the API server was slower.
	Rate          float64 `json:"rate"`
	MedianSeconds float64 `json:"medianSeconds"`
	P99Seconds    float64 `json:"p99Seconds"`
	MaxSeconds    float64 `json:"maxSeconds"`
	// LastWriteSeconds is from the last write's acknowledgement until every summary showed the
	// phase's final count.
	LastWriteSeconds float64 `json:"lastWriteToSummarySeconds"`
	HubWrites        float64 `json:"hubWrites"`
}

// ChangeResult: web-0's image changed (or, OverrideChange, app-0's override of region-0); which works
// the hub rewrote.
type ChangeResult struct {
	// Expected is N: every work of app-0 (for the override, those on region-0's clusters; OfApp then
	// counts those).
	Expected int `json:"expected"`
	// Rewritten counts the works whose generation changed; OfApp those of app-0, Others the rest.
	Rewritten int `json:"rewritten"`
	OfApp     int `json:"rewrittenOfApp0"`
	Others    int `json:"rewrittenOthers"`
	// Seconds is from the Component update until the last of app-0's works was rewritten, as the API
	// server recorded the write (whole seconds).
	Seconds float64 `json:"seconds"`
	// HubWrites is ferry-hub's API writes from the update until it was idle again (works, revision,
	// status, events, and its leader-election renewals meanwhile).
	HubWrites float64 `json:"hubWrites"`
}

// RolloutSpecResult: spec.rollout set on every AppConfig, whose works all carry the revision it would
// roll out already.
type RolloutSpecResult struct {
	// Seconds is from the first update until every AppConfig showed its rollout Complete on that
	// revision.
	Seconds float64 `json:"seconds"`
	// Rewritten counts the works whose generation changed, and Revised the AppConfigs whose works
	// carry another revision after: 0 is right. (A revision the hub sees in it is rolled out, the
	// agents reporting it healthy everywhere, until Complete.)
	Rewritten int `json:"rewritten"`
	Revised   int `json:"revised"`
	// HubWrites is ferry-hub's API writes from the first update until it was idle again.
	HubWrites float64 `json:"hubWrites"`
}

// RolloutResult: every Component's image changed under spec.rollout (stages of 1 % and 10 % of the
// clusters, then the rest; minSuccessTime rolloutSoak; onFailure Rollback), with Degraded reported on
// the new revision by clusters of the second stage; followed until every AppConfig was RolledBack and
// ferry-hub idle.
type RolloutResult struct {
	// StageClusters counts each stage's clusters, by name order as the hub takes them.
	StageClusters []int `json:"stageClusters"`
	// Degraded are the clusters of the second stage that report the new revision Degraded, of every
	// AppConfig.
	Degraded []string `json:"degradedClusters"`
	// Changed counts the works (a cluster of an AppConfig) that took the new revision; Expected those
	// of the first two stages.
	Changed  int `json:"changed"`
	Expected int `json:"expected"`
	// OutOfStage counts the works that took the new revision out of turn — before every earlier
	// stage passed, or after the AppConfig showed the halt: 0 is right. Violations are the first,
	// each with why.
	OutOfStage int      `json:"outOfStage"`
	Violations []string `json:"violations,omitempty"`
	// HaltsLost counts the AppConfigs whose status, having shown the halt, went back to another
	// phase of the same revision (Progressing): 0 is right.
	HaltsLost int `json:"haltsLost"`
	// Halted counts the AppConfigs that showed RolloutHalted (or a rollback) after a Degraded report;
	// Halt*Seconds, over them, from the acknowledgement of the AppConfig's first Degraded report on
	// the new revision until then.
	Halted            int     `json:"halted"`
	HaltMedianSeconds float64 `json:"haltMedianSeconds"`
	HaltP99Seconds    float64 `json:"haltP99Seconds"`
	HaltMaxSeconds    float64 `json:"haltMaxSeconds"`
	// BatchReports are the reports on the new revision from the second stage's clusters, of every
	// AppConfig; BatchSeconds from the first sent to the last acknowledged.
	BatchReports int     `json:"secondStageReports"`
	BatchSeconds float64 `json:"secondStageReportSeconds"`
	// Rollback: from the first Degraded report's acknowledgement until every changed work of the
	// AppConfig was back on the stable revision and its healthy report acknowledged, over the
	// AppConfigs. (The hub writes the rollback before the status that shows the halt: counted from the
	// halt, it would often be nothing.)
	RollbackMedianSeconds float64 `json:"rollbackMedianSeconds"`
	RollbackP99Seconds    float64 `json:"rollbackP99Seconds"`
	RollbackMaxSeconds    float64 `json:"rollbackMaxSeconds"`
	// RolledBack counts the AppConfigs that showed phase RolledBack; RolledBack*Seconds from the first
	// Degraded report.
	RolledBack              int     `json:"rolledBack"`
	RolledBackMedianSeconds float64 `json:"rolledBackMedianSeconds"`
	RolledBackMaxSeconds    float64 `json:"rolledBackMaxSeconds"`
	// Rewrites counts the works' changes of revision, forward and back.
	Rewrites int `json:"rewrites"`
	// Seconds is from the Component changes until every AppConfig showed RolledBack.
	Seconds float64 `json:"seconds"`
	// HubWrites is ferry-hub's API writes from the Component changes until it was idle after the
	// rollback; HubWritesPerCluster that over the clusters.
	HubWrites           float64 `json:"hubWrites"`
	HubWritesPerCluster float64 `json:"hubWritesPerCluster"`
}

type SizeResult struct {
	Name  string `json:"name"`
	Bytes int    `json:"bytes"`
}

// ProcessResult is what was sampled of a process over the whole run.
type ProcessResult struct {
	Name       string  `json:"name"`
	PeakRSS    uint64  `json:"peakRSSBytes"`
	HWM        uint64  `json:"hwmBytes"`
	CPUSeconds float64 `json:"cpuSeconds"`
}

// PhaseResult is where time, processor time and memory went in one phase.
type PhaseResult struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	// HubWrites is ferry-hub's API writes in the phase.
	HubWrites float64 `json:"hubWrites"`
	// CPUSeconds is the processor time each process used in the phase, by process.
	CPUSeconds map[string]float64 `json:"cpuSeconds"`
	// HubRSS and HubHeap are ferry-hub's resident memory and Go heap in use at the end of the phase.
	HubRSS  uint64 `json:"hubRSSBytes"`
	HubHeap uint64 `json:"hubHeapInUseBytes"`
	// AppConfigReconciles is how many reconciles ferry-hub's AppConfig controller ran in the phase,
	// ReconcileMeanSeconds their mean time, QueueWaitMeanSeconds the mean time an AppConfig waited in
	// the controller's queue once due (its workqueue metrics; a batched report's wait is not counted).
	AppConfigReconciles  float64 `json:"appConfigReconciles,omitempty"`
	ReconcileMeanSeconds float64 `json:"reconcileMeanSeconds,omitempty"`
	QueueWaitMeanSeconds float64 `json:"queueWaitMeanSeconds,omitempty"`
	// AppConfigPatches is how many PATCH requests of AppConfigs (their status: ferry-hub's summaries)
	// kube-apiserver served in the phase, and AppConfigPatchBytes the size of their bodies in all.
	AppConfigPatches    float64 `json:"appConfigPatches,omitempty"`
	AppConfigPatchBytes float64 `json:"appConfigPatchBytes,omitempty"`
	// HubAPIServerShare is ferry-hub's share of kube-apiserver's time executing requests in the phase
	// (its priority and fairness' execution time: ferry-hub's flow schema over all of them).
	HubAPIServerShare float64 `json:"hubAPIServerShare,omitempty"`
	// APIServer are the requests kube-apiserver spent most time serving in the phase, from anyone.
	APIServer []RequestStat `json:"apiServerTopRequests,omitempty"`
}

// TargetResult is one of issue 11's targets and whether this run met it.
type TargetResult struct {
	Target string `json:"target"`
	Got    string `json:"got"`
	Met    bool   `json:"met"`
}

func newResult(o *options) *Result {
	return &Result{Machine: machine(), Config: Config{
		Clusters: o.clusters, AppConfigs: o.appConfigs, Works: o.clusters * o.appConfigs, StatusRate: o.statusRate,
		InitialStatusRate: o.initialRate, LagWrites: o.lagWrites, HubArgs: o.hubArgs, HubShards: o.hubShards, Rollout: o.rollout,
		ClusterSets: o.clusterSets, AppConfigNamespaces: o.appConfigNamespaces, Tenancy: o.tenancy(), Overrides: o.overrides,
		CPULoadCores: o.cpuLoad,
	}}
}

// machine describes this machine from /proc and the build.
func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), LoadAverageStart: loadAverage()}
	m.CPUModel = procField("/proc/cpuinfo", "model name")
	if kb := procField("/proc/meminfo", "MemTotal"); kb != "" {
		var n uint64
		if _, err := fmt.Sscanf(kb, "%d kB", &n); err == nil {
			m.MemBytes = n * 1024
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	// Read-only; empty outside a checkout.
	if out, err := exec.Command("git", "describe", "--always", "--dirty").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	}
	return m
}

// loadAverage is the 1, 5 and 15 minute load averages of /proc/loadavg, or "".
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// procField is the value of the first "key: value" line of a /proc file, or "".
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// writeJSON writes the result to path, making its directory.
func (r *Result) writeJSON(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the result: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write the result: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write the result: %w", err)
	}
	return nil
}
