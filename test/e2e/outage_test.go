package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/internal/testing/deployrunner"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

// outageDuration is how long each API server stays down: long enough for every client of the agent
// to hit its backoff ceilings, as a real outage does.
const outageDuration = 30 * time.Second

// An API server that goes away for 30 s and comes back on the same address and etcd costs nothing but
// time: the agent deletes nothing on the spoke, says once that the server is unreachable and once that
// it is back, and every ManifestWork converges afterwards; ferry-hub survives its own API server's
// restart and delivers what changes after it.
//
// Stopping API servers needs clusters of our own: this test always runs on local clusters, with the
// real ferry-hub and ferry-agent binaries started the way ferry-local starts them: as deploy/ ships
// them, each as its ServiceAccount, the agents with the hub credentials `ferry-hub clusters add` makes.
func TestAPIServerOutages(t *testing.T) {
	t.Parallel() // brings clusters of its own: see doc.go
	started := time.Now()
	s := startOutageEnv(t)
	t.Logf("environment ready in %s", time.Since(started).Round(time.Second))

	// Steady state: works of both clusters and an application, all applied.
	var steady []*workv1.ManifestWork
	for _, spoke := range s.env.Spokes {
		for i := range 10 {
			steady = append(steady, s.createWork(t, spoke.Name, fmt.Sprintf("steady-%d", i)))
		}
	}
	s.createApp(t, "v1")
	s.waitConverged(t, "steady-state works", steady, 2*time.Minute)
	s.waitAppDelivered(t, "v1", 2*time.Minute)

	t.Run("hub API server down during steady state", func(t *testing.T) {
		before := s.spokeObjects(t)
		outage := s.stopFor(t, s.env.Hub, outageDuration)
		s.updateApp(t, "v2") // ferry-hub lives on: a change after the restart is delivered
		s.waitConverged(t, "works after the hub outage", steady, 2*time.Minute)
		s.waitAppDelivered(t, "v2", 2*time.Minute)
		t.Logf("recovery: API server up → all works current and the changed application delivered in %s", time.Since(outage.up).Round(100*time.Millisecond))
		s.checkNothingDeleted(t, before)
		for _, spoke := range s.env.Spokes {
			s.checkOneLinePerOutage(t, spoke.Name, outage, "hub")
		}
	})

	t.Run("hub API server down while 100 works are applied", func(t *testing.T) {
		// Created all at once, faster than the agents apply them.
		burst := make([]*workv1.ManifestWork, 100)
		var created sync.WaitGroup
		for i := range burst {
			created.Add(1)
			go func() {
				defer created.Done()
				burst[i] = s.createWork(t, s.env.Spokes[i%2].Name, fmt.Sprintf("burst-%d", i))
			}()
		}
		created.Wait()
		if t.Failed() {
			t.FailNow()
		}
		// Stop the hub while the agents are in the middle of it: some works applied, others not.
		var appliedAtStop int
		eventually(t, "first works of the burst applied", time.Minute, func(ctx context.Context) (bool, error) {
			appliedAtStop = s.countConverged(t, "burst-")
			return appliedAtStop >= 1, nil
		})
		before := s.spokeObjects(t)
		outage := s.stopFor(t, s.env.Hub, outageDuration)
		t.Logf("%d of 100 works had their status reported when the hub stopped", appliedAtStop)
		s.waitConverged(t, "works after the hub outage", append(burst, steady...), 3*time.Minute)
		t.Logf("recovery: API server up → all 120 works current in %s", time.Since(outage.up).Round(100*time.Millisecond))
		s.checkNothingDeleted(t, before)
		for _, spoke := range s.env.Spokes {
			s.checkOneLinePerOutage(t, spoke.Name, outage, "hub")
		}
		if appliedAtStop == 100 {
			t.Logf("every work was applied before the hub stopped: the burst was faster than the stop")
		}
	})

	t.Run("spoke API server down while its works change", func(t *testing.T) {
		spoke := s.env.Spokes[0]
		before := s.spokeObjects(t)
		outage := s.stopFor(t, spoke, outageDuration, func() {
			// The hub is up: the works of the unreachable spoke change meanwhile.
			for _, w := range steady {
				if w.Namespace == spoke.Name {
					s.updateWork(t, w, "changed during the spoke outage")
				}
			}
		})
		s.waitConverged(t, "works after the spoke outage", steady, 2*time.Minute)
		t.Logf("recovery: API server up → all works current in %s", time.Since(outage.up).Round(100*time.Millisecond))
		s.checkNothingDeleted(t, before)
		s.checkOneLinePerOutage(t, spoke.Name, outage, "spoke")
		s.checkQuiet(t, s.env.Spokes[1].Name, outage)
	})
	t.Logf("whole outage test: %s", time.Since(started).Round(time.Second))
}

// outageEnv is a local hub and two spokes with ferry-hub and a ferry-agent per spoke running.
type outageEnv struct {
	env    *localcluster.Environment
	logDir string
	hub    *cluster // as a user reaches it (dynamic), for the AppConfig
	works  workclient.Interface
	spokes map[string]kubernetes.Interface
}

func startOutageEnv(t *testing.T) *outageEnv {
	t.Helper()
	// Build while the clusters start.
	built := make(chan string, 1)
	go func() { built <- buildBinaries(t, "ferry-hub", "ferry-agent") }()
	env := localcluster.StartForTest(t, localcluster.Options{
		// The hub's token controller fills the token Secrets of the agents' hub credentials.
		Hub:    localcluster.ClusterSpec{ControllerManager: true},
		Spokes: []localcluster.ClusterSpec{{Name: "cluster1"}, {Name: "cluster2"}},
	})
	bin := <-built
	if t.Failed() {
		t.FailNow()
	}
	s := &outageEnv{env: env, logDir: logDir(t), spokes: map[string]kubernetes.Interface{}}

	// ferry-hub and the agents as ferry-local runs them, with what deploy/ ships.
	startShippedHub(t, env.Hub, filepath.Join(bin, "ferry-hub"), s.logPath("hub-controller"),
		// deploy/hub elects a leader, and ferry-hub, as every controller-runtime manager, exits when it
		// cannot renew its Lease for 10s: a 30s outage of its own API server ends it, and in a pod the
		// kubelet starts it again. This test is about living through the outage in one process.
		deployrunner.Set("leader-elect", "false"))
	for _, spoke := range env.Spokes {
		startShippedAgent(t, env, spoke, filepath.Join(bin, "ferry-agent"), s.logPath("agent-"+spoke.Name))
		kube, err := kubernetes.NewForConfig(spoke.Config)
		if err != nil {
			t.Fatal(err)
		}
		s.spokes[spoke.Name] = kube
	}
	works, err := workclient.NewForConfig(env.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	s.works = works
	s.hub = connect(t, "hub", env.Hub.Kubeconfig)
	return s
}

func (s *outageEnv) logPath(name string) string { return filepath.Join(s.logDir, name+".log") }

// outage is one stop and start of an API server, with where each log stood when it began.
type outage struct {
	down, up   time.Time
	logOffsets map[string]int64
}

// stopFor stops the cluster's API server, runs during (if any) while it is down, starts it again once
// down has passed, and returns when it serves.
func (s *outageEnv) stopFor(t *testing.T, c *localcluster.Cluster, down time.Duration, during ...func()) outage {
	t.Helper()
	o := outage{logOffsets: map[string]int64{}}
	for _, spoke := range s.env.Spokes {
		if fi, err := os.Stat(s.logPath("agent-" + spoke.Name)); err == nil {
			o.logOffsets[spoke.Name] = fi.Size()
		}
	}
	o.down = time.Now()
	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	for _, f := range during {
		f()
	}
	// The outage itself, not a wait for a result: the API server stays away this long.
	time.Sleep(time.Until(o.down.Add(down)))
	if err := c.StartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
	o.up = time.Now()
	t.Logf("%s API server down for %s, ready again after %s", c.Name, down, o.up.Sub(o.down).Round(100*time.Millisecond))
	return o
}

// agentLogSince is what the spoke's agent logged since the outage began.
func (s *outageEnv) agentLogSince(t *testing.T, spoke string, o outage) []string {
	t.Helper()
	data, err := os.ReadFile(s.logPath("agent-" + spoke))
	if err != nil {
		t.Fatal(err)
	}
	data = data[min(o.logOffsets[spoke], int64(len(data))):]
	return strings.Split(strings.TrimRight(string(data), "\n"), "\n")
}

// checkOneLinePerOutage: the agent said once that the API server (role) is unreachable and once that it
// is back, and logged no failed request besides.
func (s *outageEnv) checkOneLinePerOutage(t *testing.T, spoke string, o outage, role string) {
	t.Helper()
	// The end of the outage is logged by a probe: allow it a moment after the works converged.
	var lines []string
	// A timeout is not fatal here: the counts below say what is missing.
	_ = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		lines = s.agentLogSince(t, spoke, o)
		return countContaining(lines, role+" API server reachable again") > 0, nil
	})
	if n := countContaining(lines, role+" API server unreachable"); n != 1 {
		t.Errorf("%s: agent logged %d lines saying the %s API server is unreachable, want 1:\n%s", spoke, n, role, strings.Join(lines, "\n"))
	}
	if n := countContaining(lines, role+" API server reachable again"); n != 1 {
		t.Errorf("%s: agent logged %d lines saying the %s API server is reachable again, want 1", spoke, n, role)
	}
	var noise []string
	for _, l := range lines {
		if !strings.Contains(l, "API server unreachable") && !strings.Contains(l, "API server reachable again") && mentionsFailure(l) {
			noise = append(noise, l)
		}
	}
	if len(noise) > 0 {
		t.Errorf("%s: during the %s outage the agent logged %d more lines about failed requests, want none beside the outage's own; the first:\n%s",
			spoke, role, len(noise), strings.Join(noise[:min(10, len(noise))], "\n"))
	}
	t.Logf("%s: agent log during the %s outage (%d lines):\n%s", spoke, role, len(lines), strings.Join(lines[:min(8, len(lines))], "\n"))
}

// checkQuiet: an agent whose API servers all stayed up logged no failure during another's outage.
func (s *outageEnv) checkQuiet(t *testing.T, spoke string, o outage) {
	t.Helper()
	for _, l := range s.agentLogSince(t, spoke, o) {
		if mentionsFailure(l) || strings.Contains(l, "unreachable") {
			t.Errorf("%s: agent logged during an outage that was not its own: %s", spoke, l)
		}
	}
}

func mentionsFailure(line string) bool {
	// (Not a bare "503": it is part of ports such as 127.0.0.1:35037 that lines name.)
	for _, s := range []string{"connection refused", "dial tcp", "Failed to watch", "failed to list", "connection reset", "EOF", "Service Unavailable", "unable to handle the request"} {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

func countContaining(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// spokeObjects is the UID of every object the works applied and of every AppliedManifestWork, per
// spoke and name.
func (s *outageEnv) spokeObjects(t *testing.T) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for name, kube := range s.spokes {
		cms, err := kube.CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{LabelSelector: "ferry-e2e=outage"})
		if err != nil {
			t.Fatal(err)
		}
		for _, cm := range cms.Items {
			out[name+" ConfigMap "+cm.Name] = cm.UID
		}
		cfg := s.env.Spoke(name).Config
		spokeWorks, err := workclient.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		amws, err := spokeWorks.WorkV1().AppliedManifestWorks().List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range amws.Items {
			out[name+" AppliedManifestWork "+a.Name] = a.UID
		}
	}
	return out
}

// checkNothingDeleted: every object there before the outage is there after, the same object (a delete
// and re-create would change its UID).
func (s *outageEnv) checkNothingDeleted(t *testing.T, before map[string]types.UID) {
	t.Helper()
	after := s.spokeObjects(t)
	for key, uid := range before {
		switch got, ok := after[key]; {
		case !ok:
			t.Errorf("%s was deleted during the outage", key)
		case got != uid:
			t.Errorf("%s was deleted and created again during the outage: uid %s, before %s", key, got, uid)
		}
	}
	t.Logf("%d objects and AppliedManifestWorks on the spokes kept their UIDs", len(before))
}

// createWork creates a ManifestWork of one ConfigMap in the cluster's namespace.
func (s *outageEnv) createWork(t *testing.T, namespace, name string) *workv1.ManifestWork {
	t.Helper()
	w := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{configMapManifest(name, "initial")}}},
	}
	created, err := s.works.WorkV1().ManifestWorks(namespace).Create(t.Context(), w, metav1.CreateOptions{})
	if err != nil {
		t.Errorf("create ManifestWork %s/%s: %v", namespace, name, err) // Errorf: called from goroutines too
		return w
	}
	return created
}

func (s *outageEnv) updateWork(t *testing.T, w *workv1.ManifestWork, value string) {
	t.Helper()
	eventually(t, "update ManifestWork "+w.Name, 30*time.Second, func(ctx context.Context) (bool, error) {
		cur, err := s.works.WorkV1().ManifestWorks(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		cur.Spec.Workload.Manifests = []workv1.Manifest{configMapManifest(w.Name, value)}
		_, err = s.works.WorkV1().ManifestWorks(w.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
		return err == nil, nil
	})
}

func configMapManifest(name, value string) workv1.Manifest {
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"ferry-e2e": "outage"}},
		Data:       map[string]string{"value": value},
	}
	return workv1.Manifest{RawExtension: runtime.RawExtension{Object: cm}}
}

// workCurrent: the agent reported the work's current generation applied and available, each manifest
// too.
func workCurrent(w *workv1.ManifestWork) bool {
	for _, typ := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
		c := meta.FindStatusCondition(w.Status.Conditions, typ)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != w.Generation {
			return false
		}
	}
	manifests := w.Status.ResourceStatus.Manifests
	if len(manifests) != len(w.Spec.Workload.Manifests) {
		return false
	}
	for _, m := range manifests {
		for _, typ := range []string{workv1.ManifestApplied, workv1.ManifestAvailable} {
			if !meta.IsStatusConditionTrue(m.Conditions, typ) {
				return false
			}
		}
	}
	return true
}

// countConverged counts the works whose name starts with prefix and whose status is current.
func (s *outageEnv) countConverged(t *testing.T, prefix string) int {
	n := 0
	for _, spoke := range s.env.Spokes {
		works, err := s.works.WorkV1().ManifestWorks(spoke.Name).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			continue
		}
		for i := range works.Items {
			if strings.HasPrefix(works.Items[i].Name, prefix) && workCurrent(&works.Items[i]) {
				n++
			}
		}
	}
	return n
}

// waitConverged waits until every work's status is current and its ConfigMap on the spoke holds what
// the work says.
func (s *outageEnv) waitConverged(t *testing.T, what string, works []*workv1.ManifestWork, timeout time.Duration) {
	t.Helper()
	var pending string
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, w := range works {
			cur, err := s.works.WorkV1().ManifestWorks(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
			if err != nil || !workCurrent(cur) {
				pending = fmt.Sprintf("ManifestWork %s/%s: status not current (err %v)", w.Namespace, w.Name, err)
				return false, nil
			}
			want := &corev1.ConfigMap{}
			if err := json.Unmarshal(cur.Spec.Workload.Manifests[0].Raw, want); err != nil {
				return false, err
			}
			got, err := s.spokes[w.Namespace].CoreV1().ConfigMaps("default").Get(ctx, w.Name, metav1.GetOptions{})
			if err != nil || got.Data["value"] != want.Data["value"] {
				pending = fmt.Sprintf("%s: ConfigMap %s not as its work says (err %v)", w.Namespace, w.Name, err)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%s not converged within %s: %v; still pending: %s", what, timeout, err, pending)
	}
}
