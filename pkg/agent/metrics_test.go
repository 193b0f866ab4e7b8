package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ferry-mc/ferry/pkg/agent"
)

// The agent's metrics, as the registry its --metrics-bind-address serves them: every manifest
// apply counted by strategy and outcome and timed, the works of the cluster counted by condition, and
// the ManifestWork queue's workqueue metrics under the names dashboards for kubebuilder controllers use.
// Counters are process-wide and other tests' agents add to them, so they are compared before and after.
func TestMetricsCountAppliesWorksAndTheQueue(t *testing.T) {
	f := startAgent(t)
	before := gatherMetrics(t)
	// (Work names carry the cluster's: AppliedManifestWorks on the shared spoke are named after the work,
	// and the test may run more than once in a process.)

	good := f.work("metrics-good-"+f.cluster, namespaceManifest, configMapA, configMapB)
	good.Spec.ManifestConfigs = []workv1.ManifestConfigOption{
		strategy("configmaps", f.cluster, "b", workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeCreateOnly}),
	}
	f.create(good)
	// A ConfigMap in a namespace the spoke does not have: the API server refuses it.
	bad := f.create(f.work("metrics-bad-"+f.cluster, `{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: "missing-{{ns}}"}}`))
	f.waitWork(good.Name, "applied", allApplied)
	f.waitWork(bad.Name, "failed", func(w *workv1.ManifestWork) bool {
		return hasCondition(w, 0, workv1.ManifestApplied, metav1.ConditionFalse)
	})

	// The works gauge reads the agent's informer cache, which sees the status the agent wrote a moment
	// after the hub has it.
	f.eventually("works gauge follows the status", func(context.Context) (bool, error) {
		m := gatherMetrics(t)
		return m.value("ferry_agent_works", "condition", "Applied", "status", "True") == 1 &&
			m.value("ferry_agent_works", "condition", "Applied", "status", "False") == 1, nil
	})
	m := gatherMetrics(t)
	for _, want := range []struct {
		condition, status string
		works             float64
	}{
		{"Applied", "True", 1}, {"Applied", "False", 1}, {"Applied", "Unknown", 0},
		{"Available", "True", 1}, {"Available", "False", 1}, {"Available", "Unknown", 0},
	} {
		if got := m.value("ferry_agent_works", "condition", want.condition, "status", want.status); got != want.works {
			t.Errorf("ferry_agent_works{condition=%q,status=%q} = %v, want %v", want.condition, want.status, got, want.works)
		}
	}

	applies := func(strategy, outcome string) float64 {
		return m.value("ferry_agent_manifest_applies_total", "strategy", strategy, "outcome", outcome) -
			before.value("ferry_agent_manifest_applies_total", "strategy", strategy, "outcome", outcome)
	}
	applyTimes := func(strategy string) float64 {
		return m.value("ferry_agent_manifest_apply_duration_seconds", "strategy", strategy) -
			before.value("ferry_agent_manifest_apply_duration_seconds", "strategy", strategy)
	}
	if got := applies("CreateOnly", "applied"); got != 1 {
		t.Errorf("CreateOnly applied %v times, want 1 (ConfigMap b created once)", got)
	}
	if got := applies("Update", "applied"); got < 2 {
		t.Errorf("Update applied %v times, want at least 2 (the Namespace and ConfigMap a)", got)
	}
	if got := applies("Update", "failed"); got < 1 {
		t.Errorf("Update failed %v times, want at least 1 (the ConfigMap in a missing namespace)", got)
	}
	if got := applies("CreateOnly", "failed"); got != 0 {
		t.Errorf("CreateOnly failed %v times, want 0", got)
	}
	if got := applyTimes("CreateOnly"); got < 1 {
		t.Errorf("apply duration of CreateOnly has %v new samples, want at least 1", got)
	}
	if got := applyTimes("Update"); got < 3 {
		t.Errorf("apply duration of Update has %v new samples, want at least 3", got)
	}

	for _, name := range []string{
		"workqueue_depth", "workqueue_adds_total", "workqueue_queue_duration_seconds", "workqueue_work_duration_seconds",
		"workqueue_unfinished_work_seconds", "workqueue_longest_running_processor_seconds", "workqueue_retries_total",
	} {
		if !m.has(name, "name", "manifestworks", "controller", "manifestworks") {
			t.Errorf("no %s{name=\"manifestworks\"}; metrics of the workqueues: %s", name, m.names("workqueue_"))
		}
	}
	// Beside them on the same registry, controller-runtime's metrics of client-go's requests.
	if len(m["rest_client_requests_total"].GetMetric()) == 0 {
		t.Errorf("no rest_client_requests_total; metrics of the REST clients: %s", m.names("rest_client_"))
	}
	if got := m.value("workqueue_adds_total", "name", "manifestworks") - before.value("workqueue_adds_total", "name", "manifestworks"); got < 2 {
		t.Errorf("workqueue_adds_total{name=\"manifestworks\"} grew by %v, want at least 2 (two works)", got)
	}

	// A change of the work reconciles it again: the CreateOnly object exists and the Update ones already
	// match, so they are unchanged; nothing is created twice.
	before = m
	f.update(good.Name, func(w *workv1.ManifestWork) {
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests,
			f.work("x", `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: "{{ns}}"}}`).Spec.Workload.Manifests[0])
	})
	f.waitWork(good.Name, "applied again", allApplied)
	m = gatherMetrics(t)
	if got := applies("CreateOnly", "unchanged"); got < 1 {
		t.Errorf("CreateOnly unchanged %v times after the change, want at least 1", got)
	}
	if got := applies("CreateOnly", "applied"); got != 0 {
		t.Errorf("CreateOnly applied %v more times after the change, want 0", got)
	}
	if got := applies("Update", "unchanged"); got < 2 {
		t.Errorf("Update unchanged %v times after the change, want at least 2 (the Namespace and ConfigMap a)", got)
	}
	if got := applies("Update", "applied"); got < 1 {
		t.Errorf("Update applied %v times after the change, want at least 1 (ConfigMap c)", got)
	}

	// A field another manager took makes a server-side apply conflict.
	before = m
	ssaConfigMap := `{apiVersion: v1, kind: ConfigMap, metadata: {name: d, namespace: "{{ns}}"}, data: {k: "1"}}`
	ssa := f.work("metrics-ssa-"+f.cluster, ssaConfigMap)
	ssa.Spec.ManifestConfigs = []workv1.ManifestConfigOption{
		strategy("configmaps", f.cluster, "d", workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply}),
	}
	f.create(ssa)
	f.waitWork(ssa.Name, "applied", allApplied)
	force := true
	if _, err := f.kube.CoreV1().ConfigMaps(f.cluster).Patch(t.Context(), "d", types.ApplyPatchType,
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d"},"data":{"k":"9"}}`),
		metav1.PatchOptions{FieldManager: "someone-else", Force: &force}); err != nil {
		t.Fatal(err)
	}
	f.update(ssa.Name, func(w *workv1.ManifestWork) {
		w.Spec.Workload.Manifests[0] = f.work("x", strings.Replace(ssaConfigMap, `k: "1"`, `k: "2"`, 1)).Spec.Workload.Manifests[0]
	})
	f.waitWork(ssa.Name, "conflict", func(w *workv1.ManifestWork) bool {
		c := manifestCondition(w, 0, workv1.ManifestApplied)
		return c != nil && c.Reason == agent.ReasonApplyConflict && c.ObservedGeneration == w.Generation
	})
	m = gatherMetrics(t)
	if got := applies("ServerSideApply", "applied"); got < 1 {
		t.Errorf("ServerSideApply applied %v times, want at least 1 (ConfigMap d created)", got)
	}
	if got := applies("ServerSideApply", "conflict"); got < 1 {
		t.Errorf("ServerSideApply conflicted %v times, want at least 1", got)
	}
	if got := applies("ServerSideApply", "failed"); got != 0 {
		t.Errorf("ServerSideApply failed %v times, want 0: a conflict is counted as one", got)
	}
}

// metricSnapshot is one gathering of the registry the agent serves.
type metricSnapshot map[string]*dto.MetricFamily

func gatherMetrics(t *testing.T) metricSnapshot {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	s := metricSnapshot{}
	for _, mf := range families {
		s[mf.GetName()] = mf
	}
	return s
}

// find returns the series of family name whose labels include the given name/value pairs.
func (s metricSnapshot) find(name string, labelPairs ...string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range s[name].GetMetric() {
		if hasLabels(m, labelPairs) {
			out = append(out, m)
		}
	}
	return out
}

func hasLabels(m *dto.Metric, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == pairs[i] && l.GetValue() == pairs[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func (s metricSnapshot) has(name string, labelPairs ...string) bool {
	return len(s.find(name, labelPairs...)) > 0
}

// value sums the matching series: a counter's or gauge's value, a histogram's sample count; 0 when
// there is none.
func (s metricSnapshot) value(name string, labelPairs ...string) float64 {
	var sum float64
	for _, m := range s.find(name, labelPairs...) {
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// names lists the families whose name starts with prefix, for failure messages.
func (s metricSnapshot) names(prefix string) string {
	var out []string
	for name, mf := range s {
		if strings.HasPrefix(name, prefix) {
			out = append(out, fmt.Sprintf("%s(%d series)", name, len(mf.GetMetric())))
		}
	}
	return "[" + strings.Join(out, " ") + "]"
}
