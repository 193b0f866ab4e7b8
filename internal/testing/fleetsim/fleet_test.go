package fleetsim

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ferry-mc/ferry/internal/statusview"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
)

// eventually polls cond every 50ms until it holds, failing the test after timeout with what it waited
// for.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, timeout, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// Registered clusters are what an AppConfig's clusterSelector picks: a labelled, accepted
// ManagedCluster and a namespace for its works each; registering again changes nothing.
func TestRegisterClustersMakesThemSelectable(t *testing.T) {
	cfg := FastConfig(shared.Get(t).Hub.Config, 500, 1000)
	names, err := RegisterClusters(t.Context(), cfg, ClusterOptions{Count: 20, Prefix: "sel-"})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 20 || names[0] != "sel-00000" || names[19] != "sel-00019" {
		t.Fatalf("names %v: want sel-00000 … sel-00019", names)
	}
	clusters, err := clusterclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	selector, err := metav1.LabelSelectorAsSelector(Selector())
	if err != nil {
		t.Fatal(err)
	}
	list, err := clusters.ClusterV1().ManagedClusters().List(t.Context(), metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		t.Fatal(err)
	}
	var selected []string
	for _, mc := range list.Items {
		if strings.HasPrefix(mc.Name, "sel-") {
			selected = append(selected, mc.Name)
			if !mc.Spec.HubAcceptsClient {
				t.Errorf("ManagedCluster %s is not accepted by the hub", mc.Name)
			}
		}
	}
	slices.Sort(selected)
	if !slices.Equal(selected, names) {
		t.Errorf("the selector picks %v, want %v", selected, names)
	}
	kube := kubernetes.NewForConfigOrDie(cfg)
	for _, name := range names {
		if _, err := kube.CoreV1().Namespaces().Get(t.Context(), name, metav1.GetOptions{}); err != nil {
			t.Errorf("namespace of cluster %s: %v", name, err)
		}
	}
	again, err := RegisterClusters(t.Context(), cfg, ClusterOptions{Count: 20, Prefix: "sel-"})
	if err != nil || !slices.Equal(again, names) {
		t.Errorf("registering again: %v, %v; want the same names and no error", again, err)
	}
}

// The simulated agents report on the works the tracker follows: the API server takes their status
// through the status subresource, the status reads as healthy or degraded, the rate holds, and a
// work the hub rewrites is reported on at its new generation.
func TestAgentsReportOnTrackedWorks(t *testing.T) {
	cfg := FastConfig(shared.Get(t).Hub.Config, 500, 1000)
	names, err := RegisterClusters(t.Context(), cfg, ClusterOptions{Count: 20, Prefix: "agents-"})
	if err != nil {
		t.Fatal(err)
	}
	works := workclient.NewForConfigOrDie(cfg)
	tracker, err := NewWorkTracker(works)
	if err != nil {
		t.Fatal(err)
	}
	if err := tracker.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, cluster := range names {
		mw := hubWork(cluster, 0)
		if _, err := works.WorkV1().ManifestWorks(cluster).Create(t.Context(), mw, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ours := func() []*Work {
		var out []*Work
		for _, w := range tracker.Works() {
			if strings.HasPrefix(w.Namespace, "agents-") {
				out = append(out, w)
			}
		}
		return out
	}
	eventually(t, 30*time.Second, "the tracker to see 20 works", func(context.Context) (bool, error) { return len(ours()) == 20, nil })
	if err := tracker.Err(); err != nil {
		t.Fatal(err)
	}

	const rate = 40
	agents, err := NewAgents(works, AgentOptions{Rate: rate, Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	acked, err := agents.WriteAll(t.Context(), ours(), Healthy)
	if err != nil {
		t.Fatal(err)
	}
	// Twenty writes at 40 a second, the first at once: at least 19 intervals of 25ms.
	if elapsed := time.Since(start); elapsed < 19*time.Second/rate || agents.Written() != 20 {
		t.Errorf("20 writes at %d/s took %v, %d counted; want at least 475ms, 20", rate, elapsed, agents.Written())
	}
	for i, at := range acked {
		if at.Before(start) {
			t.Errorf("write %d has no acknowledgement time", i)
		}
	}
	health := func(cluster string) statusview.Work {
		mw, err := works.WorkV1().ManifestWorks(cluster).Get(t.Context(), "shop.web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return statusview.ForWork(mw)
	}
	for _, cluster := range names {
		if v := health(cluster); !v.Healthy {
			t.Errorf("work on %s after a healthy report: %v", cluster, v.Problems())
		}
	}

	statusOnly, _ := tracker.Get(names[3], "shop.web")
	if _, err := agents.WriteAll(t.Context(), ours()[:5], Degraded); err != nil {
		t.Fatal(err)
	}
	for i, cluster := range names {
		if v, want := health(cluster), i < 5; (v.Health == v1alpha2.Degraded) != want || v.Healthy == want {
			t.Errorf("work on %s: health %s, healthy %t; degraded want %t", cluster, v.Health, v.Healthy, want)
		}
	}

	// The hub rewrites one work: the tracker has its new generation, first seen now; the others
	// keep theirs.
	before, _ := tracker.Get(names[7], "shop.web")
	mw, err := works.WorkV1().ManifestWorks(names[7]).Get(t.Context(), "shop.web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mw.Spec.Workload.Manifests[0].Raw = []byte(strings.Replace(string(mw.Spec.Workload.Manifests[0].Raw), `"replicas":2`, `"replicas":3`, 1))
	if _, err := works.WorkV1().ManifestWorks(names[7]).Update(t.Context(), mw, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var rewritten *Work
	eventually(t, 30*time.Second, "the tracker to see the new generation", func(context.Context) (bool, error) {
		rewritten, _ = tracker.Get(names[7], "shop.web")
		return rewritten.Generation > before.Generation, nil
	})
	if !rewritten.Seen.After(before.Seen) || rewritten.Manifests[0].Replicas != 3 {
		t.Errorf("rewritten work: seen %v (was %v), replicas %d; want seen later, 3 replicas", rewritten.Seen, before.Seen, rewritten.Manifests[0].Replicas)
	}
	// A work whose status alone changed keeps the time its generation was first seen.
	var now *Work
	eventually(t, 30*time.Second, "the tracker to see a status change", func(context.Context) (bool, error) {
		now, _ = tracker.Get(names[3], "shop.web")
		return now.ResourceVersion != statusOnly.ResourceVersion, nil
	})
	if !now.Seen.Equal(statusOnly.Seen) {
		t.Errorf("a work whose status alone changed was seen anew: %v, was %v", now.Seen, statusOnly.Seen)
	}
	if v := health(names[7]); v.Healthy {
		t.Errorf("a rewritten work still reads healthy from a report of its old generation")
	}
	if _, err := agents.Write(t.Context(), rewritten, Healthy); err != nil {
		t.Fatal(err)
	}
	v := health(names[7])
	if !v.Healthy || !slices.Contains(v.Manifests[0].Feedback, v1alpha2.FeedbackValue{Name: "ReadyReplicas", Value: "3"}) {
		t.Errorf("after a report on the new generation: healthy %t, feedback %v; want healthy with ReadyReplicas 3", v.Healthy, v.Manifests[0].Feedback)
	}
}

// The watcher records each change of an AppConfig's summary once, with the time it arrived, and
// nothing for a status change that leaves the summary alone.
func TestAppConfigWatcherRecordsSummaryChanges(t *testing.T) {
	env := shared.Get(t)
	scheme := runtime.NewScheme()
	if err := v1alpha2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(env.Hub.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "watched"}}); err != nil {
		t.Fatal(err)
	}
	app := &v1alpha2.ApplicationConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "watched"},
		Spec: v1alpha2.ApplicationConfigurationSpec{Placement: &v1alpha2.Placement{ClusterSelector: Selector()},
			Components: []v1alpha2.ApplicationConfigurationComponent{{ComponentName: "web"}}},
	}
	if err := c.Create(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	watcher, err := NewAppConfigWatcher(c, "watched")
	if err != nil {
		t.Fatal(err)
	}
	if err := watcher.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	setStatus := func(status string) time.Time {
		t.Helper()
		sent := time.Now()
		patch := client.RawPatch(types.MergePatchType, []byte(`{"status":`+status+`}`))
		if err := c.Status().Patch(t.Context(), app, patch); err != nil {
			t.Fatal(err)
		}
		return sent
	}
	sentHealthy1 := setStatus(`{"observedGeneration":1,"summary":{"clusters":3,"applied":"3/3","available":"3/3","healthy":"1/3"}}`)
	eventually(t, 10*time.Second, "the first summary", func(context.Context) (bool, error) {
		o, _ := watcher.Latest("app")
		return o.Healthy == 1, nil
	})
	setStatus(`{"conditions":[{"type":"Ready","status":"True","reason":"Delivered","message":"x","lastTransitionTime":"2025-01-01T00:00:00Z"}]}`)
	sentHealthy2 := setStatus(`{"summary":{"clusters":3,"applied":"3/3","available":"3/3","healthy":"2/3"}}`)
	eventually(t, 10*time.Second, "the second summary", func(context.Context) (bool, error) {
		o, _ := watcher.Latest("app")
		return o.Healthy == 2, nil
	})
	h := watcher.History("app")
	var got []Summary
	for _, o := range h {
		got = append(got, o.Summary)
	}
	want := []Summary{{}, {Clusters: 3, Applied: 3, Available: 3, Healthy: 1, ObservedGeneration: 1}, {Clusters: 3, Applied: 3, Available: 3, Healthy: 2, ObservedGeneration: 1}}
	if !slices.Equal(got, want) {
		t.Fatalf("history %+v, want %+v (one entry per change of the summary)", got, want)
	}
	if h[1].At.Before(sentHealthy1) || h[2].At.Before(sentHealthy2) {
		t.Errorf("observations at %v and %v, before their writes at %v and %v", h[1].At, h[2].At, sentHealthy1, sentHealthy2)
	}
	if names := watcher.Names(); !slices.Equal(names, []string{"app"}) {
		t.Errorf("names %v, want [app]", names)
	}
	if err := watcher.Err(); err != nil {
		t.Error(err)
	}
}

// APIWrites counts what a controller-runtime process writes, from the metric its /metrics serves:
// here this test process's own client-go writes, served from controller-runtime's registry as
// ferry-hub serves it; its reads do not count.
func TestAPIWritesCountsAProcesssWrites(t *testing.T) {
	env := shared.Get(t)
	server := httptest.NewServer(promhttp.HandlerFor(ctrlmetrics.Registry, promhttp.HandlerOpts{}))
	defer server.Close()
	kube := kubernetes.NewForConfigOrDie(env.Hub.Config)
	scrape := func() float64 {
		t.Helper()
		s, err := ScrapeMetrics(t.Context(), server.URL+"/metrics")
		if err != nil {
			t.Fatal(err)
		}
		return s.APIWrites()
	}
	before := scrape()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "counted", Namespace: "default"}}
	if _, err := kube.CoreV1().ConfigMaps("default").Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	patch, _ := json.Marshal(map[string]any{"data": map[string]string{"a": "b"}})
	if _, err := kube.CoreV1().ConfigMaps("default").Patch(t.Context(), "counted", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := kube.CoreV1().ConfigMaps("default").Get(t.Context(), "counted", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := kube.CoreV1().ConfigMaps("default").Delete(t.Context(), "counted", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := scrape() - before; got != 3 {
		t.Errorf("%v writes counted, want 3 (create, patch, delete; five reads not)", got)
	}
}

// The responder answers every generation no report is about: each work once when it starts, then each
// one the hub rewrites, at its new generation and revision, with the health it is told; a work whose
// report is current is left alone.
func TestResponderAnswersEveryNewGeneration(t *testing.T) {
	cfg := FastConfig(shared.Get(t).Hub.Config, 500, 1000)
	names, err := RegisterClusters(t.Context(), cfg, ClusterOptions{Count: 6, Prefix: "answer-"})
	if err != nil {
		t.Fatal(err)
	}
	works := workclient.NewForConfigOrDie(cfg)
	tracker, err := NewWorkTracker(works)
	if err != nil {
		t.Fatal(err)
	}
	if err := tracker.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	agents, err := NewAgents(works, AgentOptions{Rate: 200, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i, cluster := range names {
		mw := hubWork(cluster, 0)
		mw.Annotations = map[string]string{hub.AnnotationSpecHash: "v1"}
		if _, err := works.WorkV1().ManifestWorks(cluster).Create(t.Context(), mw, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if i == 5 {
			// Reported on already, as by an agent before the responder started.
			eventually(t, 30*time.Second, "the tracker to see the last work", func(context.Context) (bool, error) {
				_, ok := tracker.Get(cluster, "shop.web")
				return ok, nil
			})
			w, _ := tracker.Get(cluster, "shop.web")
			if _, err := agents.Write(t.Context(), w, Healthy); err != nil {
				t.Fatal(err)
			}
		}
	}
	ours := func() []*Work {
		var out []*Work
		for _, w := range tracker.Works() {
			if strings.HasPrefix(w.Namespace, "answer-") {
				out = append(out, w)
			}
		}
		return out
	}
	reported := func(context.Context) (bool, error) {
		ws := ours()
		for _, w := range ws {
			if w.ReportedGeneration != w.Generation {
				return false, nil
			}
		}
		return len(ws) == len(names), nil
	}
	eventually(t, 30*time.Second, "the last work's report", func(context.Context) (bool, error) {
		w, _ := tracker.Get(names[5], "shop.web")
		return w.ReportedGeneration == w.Generation, nil
	})
	// The second revision fails on the first cluster.
	responder := NewResponder(agents, func(w *Work) Health {
		if w.Namespace == names[0] && w.Revision == "v2" {
			return Degraded
		}
		return Healthy
	})
	responder.Start(t.Context(), tracker)
	// The tracker may see a report before the responder has recorded it: both are waited for.
	eventually(t, 30*time.Second, "a report on every work", func(ctx context.Context) (bool, error) {
		ok, err := reported(ctx)
		return ok && len(responder.Reports()) >= 5, err
	})
	if got := len(responder.Reports()); got != 5 {
		t.Errorf("%d reports at the start; want 5, none on the work reported on already", got)
	}
	for _, cluster := range names[:2] {
		mw, err := works.WorkV1().ManifestWorks(cluster).Get(t.Context(), "shop.web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mw.Annotations[hub.AnnotationSpecHash] = "v2"
		mw.Spec.Workload.Manifests[0].Raw = []byte(strings.Replace(string(mw.Spec.Workload.Manifests[0].Raw), `"replicas":2`, `"replicas":3`, 1))
		if _, err := works.WorkV1().ManifestWorks(cluster).Update(t.Context(), mw, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "reports on the rewritten works", func(ctx context.Context) (bool, error) {
		ok, err := reported(ctx)
		return ok && len(responder.Reports()) == 7, err
	})
	if err := responder.Err(); err != nil {
		t.Fatal(err)
	}
	for _, r := range responder.Reports()[5:] {
		want := Healthy
		if r.Work.Namespace == names[0] {
			want = Degraded
		}
		if r.Work.Revision != "v2" || r.Work.Generation != 2 || r.Health != want || r.Acked.Before(r.Sent) || r.Transition.After(r.Sent) {
			t.Errorf("report on %s: revision %s, generation %d, %s, sent %v, acked %v, transition %v; want v2, 2, %s, acked after sent after the transition",
				r.Work.Namespace, r.Work.Revision, r.Work.Generation, r.Health, r.Sent, r.Acked, r.Transition, want)
		}
	}
	mw, err := works.WorkV1().ManifestWorks(names[0]).Get(t.Context(), "shop.web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := statusview.ForWork(mw); v.Health != v1alpha2.Degraded {
		t.Errorf("the failing cluster's work reads %s, want Degraded", v.Health)
	}
}
