package process_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	workclientset "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/agent/process"
)

// Short leader-election timings, so that a takeover is quick (lease duration, renew deadline, retry).
const (
	testLeaseDuration = 2 * time.Second
	testRenewDeadline = 1500 * time.Millisecond
	testRetryPeriod   = 500 * time.Millisecond
)

// electedAgent is one ferry-agent run with Run, as the binary runs it, with its requests counted.
type electedAgent struct {
	name string
	// hubWrites and spokeWrites count mutating requests other than the Lease's; leaseRequests counts
	// every request about Leases (a standby reads the Lease and tries to take it).
	hubWrites, spokeWrites, leaseRequests atomic.Int64
	cancel                                context.CancelFunc
	done                                  chan error
}

func (a *electedAgent) writes() int64 { return a.hubWrites.Load() + a.spokeWrites.Load() }

// stop stops the agent and waits until Run has returned.
func (a *electedAgent) stop(t *testing.T) {
	t.Helper()
	if a.cancel == nil {
		return
	}
	a.cancel()
	a.cancel = nil
	select {
	case err := <-a.done:
		if err != nil {
			t.Errorf("agent %s: Run: %v", a.name, err)
		}
	case <-time.After(60 * time.Second):
		t.Errorf("agent %s: Run still running 60s after its context was cancelled", a.name)
	}
}

// electionEnv is a hub cluster namespace and a spoke namespace for the Lease, both the test's own.
type electionEnv struct {
	cluster, leaseNamespace string
	hubKubeconfig           string
	spoke                   kubernetes.Interface
	f                       *clusterWorks
}

func newElectionEnv(t *testing.T) *electionEnv {
	t.Helper()
	e := testEnv(t)
	_, cluster := clusterNamespace(t)
	spoke, err := kubernetes.NewForConfig(e.Spoke("spoke").Config)
	if err != nil {
		t.Fatal(err)
	}
	env := &electionEnv{cluster: cluster, leaseNamespace: "le-" + cluster, spoke: spoke}
	if _, err := spoke.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: env.leaseNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.hubKubeconfig = filepath.Join(t.TempDir(), "hub.kubeconfig")
	writeInlineKubeconfig(t, env.hubKubeconfig, e.Hub.Config)
	hub, err := workclientset.NewForConfig(e.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	env.f = &clusterWorks{t: t, cluster: cluster, hub: hub}
	return env
}

// start runs an agent for the test's cluster with leader election on, as ferry-agent runs it.
func (env *electionEnv) start(t *testing.T, name string, keepLeaseOnStop bool) *electedAgent {
	t.Helper()
	a := &electedAgent{name: name, done: make(chan error, 1)}
	o := process.NewOptions()
	o.SpokeClusterName = env.cluster
	o.HubKubeconfig = env.hubKubeconfig
	o.SpokeKubeconfig = testEnv(t).Spoke("spoke").Kubeconfig
	o.MetricsBindAddress, o.HealthProbeBindAddress = "0", "0"
	o.Workers = 2
	o.LeaderElectionNamespace = env.leaseNamespace
	o.LeaderElectionLeaseDuration, o.LeaderElectionRenewDeadline, o.LeaderElectionRetryPeriod = testLeaseDuration, testRenewDeadline, testRetryPeriod
	process.SetWrapConfig(o, func(role string, cfg *rest.Config) {
		writes := &a.hubWrites
		if role == "spoke" {
			writes = &a.spokeWrites
		}
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				switch {
				case strings.Contains(req.URL.Path, "/leases"):
					a.leaseRequests.Add(1)
				case req.Method != http.MethodGet:
					writes.Add(1)
				}
				return rt.RoundTrip(req)
			})
		})
	})
	if keepLeaseOnStop {
		process.KeepLeaseOnStop(o)
	}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	go func() { a.done <- process.Run(ctx, o) }()
	t.Cleanup(func() { a.stop(t) })
	return a
}

// lease reads the agents' Lease; nil when there is none yet.
func (env *electionEnv) lease(ctx context.Context) *coordinationv1.Lease {
	l, err := env.spoke.CoordinationV1().Leases(env.leaseNamespace).Get(ctx, process.LeaderElectionLeaseName, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return l
}

// waitHolder waits until the Lease has a holder that check accepts, and returns it.
func (env *electionEnv) waitHolder(t *testing.T, timeout time.Duration, what string, check func(holder string) bool) string {
	t.Helper()
	var holder string
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		l := env.lease(ctx)
		if l == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return false, nil
		}
		holder = *l.Spec.HolderIdentity
		return check(holder), nil
	})
	if err != nil {
		t.Fatalf("Lease %s/%s: %s within %s: %v (holder %q)", env.leaseNamespace, process.LeaderElectionLeaseName, what, timeout, err, holder)
	}
	return holder
}

func configMapWork(name string) string {
	return `{apiVersion: v1, kind: ConfigMap, metadata: {name: ` + name + `, namespace: default}, data: {v: "1"}}`
}

// Two agents run for the same cluster: while works are created and changed, only the one holding the
// Lease writes anything, to the hub or the spoke; the other only reads and tries to take the Lease.
func TestLeaderElectionOnlyTheLeaderWrites(t *testing.T) {
	env := newElectionEnv(t)
	leader := env.start(t, "first", false)
	env.waitHolder(t, 60*time.Second, "the first agent leads", func(string) bool { return true })
	standby := env.start(t, "second", false)
	// The standby is running and campaigning before any work exists.
	env.f.eventually("the second agent campaigns", func(context.Context) (bool, error) {
		return standby.leaseRequests.Load() >= 2, nil
	})

	names := []string{env.cluster + "-le-a", env.cluster + "-le-b", env.cluster + "-le-c"}
	for _, n := range names {
		env.f.create(env.f.work(n, configMapWork(n)))
	}
	for _, n := range names {
		env.f.waitWork(n, "applied", allApplied)
	}
	env.f.update(names[0], func(w *workv1.ManifestWork) {
		w.Spec.Workload.Manifests[0].Raw = []byte(strings.Replace(string(w.Spec.Workload.Manifests[0].Raw), `"v":"1"`, `"v":"2"`, 1))
	})
	env.f.waitWork(names[0], "applied after a change", allApplied)
	// A few renewals more, for a standby that writes late to be caught.
	requests := standby.leaseRequests.Load()
	env.f.eventually("the second agent keeps campaigning", func(context.Context) (bool, error) {
		return standby.leaseRequests.Load() >= requests+3, nil
	})

	if leader.hubWrites.Load() == 0 || leader.spokeWrites.Load() == 0 {
		t.Errorf("the leader wrote %d times to the hub and %d times to the spoke; want both: it applied the works", leader.hubWrites.Load(), leader.spokeWrites.Load())
	}
	if standby.writes() != 0 {
		t.Errorf("the standby wrote %d times to the hub and %d times to the spoke (not counting Lease requests); want none", standby.hubWrites.Load(), standby.spokeWrites.Load())
	}
	t.Logf("leader: %d hub and %d spoke writes, %d Lease requests; standby: %d Lease requests", leader.hubWrites.Load(), leader.spokeWrites.Load(), leader.leaseRequests.Load(), standby.leaseRequests.Load())
}

// The leader stops without releasing its Lease, as a killed process does: the standby takes over once
// the Lease expires, within the lease duration and a margin, and applies a work created after.
func TestLeaderElectionStandbyTakesOverFromAStoppedLeader(t *testing.T) {
	env := newElectionEnv(t)
	leader := env.start(t, "first", true)
	first := env.waitHolder(t, 60*time.Second, "the first agent leads", func(string) bool { return true })
	standby := env.start(t, "second", false)
	env.f.eventually("the second agent campaigns", func(context.Context) (bool, error) {
		return standby.leaseRequests.Load() >= 2, nil
	})
	before := env.cluster + "-le-before"
	env.f.create(env.f.work(before, configMapWork(before)))
	env.f.waitWork(before, "applied by the first agent", allApplied)
	if standby.writes() != 0 {
		t.Fatalf("the standby wrote %d times before the leader stopped; want none", standby.writes())
	}

	leader.stop(t)
	stopped := time.Now()
	if l := env.lease(t.Context()); l == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != first {
		t.Fatalf("the stopped leader released its Lease; this test needs a Lease left held, as a kill leaves it")
	}
	// A loaded machine gets a few seconds on top of the lease duration.
	const margin = 5 * time.Second
	second := env.waitHolder(t, testLeaseDuration+margin, "the second agent takes over", func(h string) bool { return h != first })
	t.Logf("takeover %s after the leader stopped (lease duration %s): %s -> %s", time.Since(stopped).Round(100*time.Millisecond), testLeaseDuration, first, second)

	after := env.cluster + "-le-after"
	env.f.create(env.f.work(after, configMapWork(after)))
	env.f.waitWork(after, "applied by the second agent", allApplied)
	if standby.writes() == 0 {
		t.Errorf("the work created after the takeover was applied, but not by the second agent")
	}
}

// The leader loses its Lease while running (here another holder takes it, as after a spoke API server
// outage longer than the renew deadline): it stops its workers without ending the process, campaigns
// again, and works again once it holds the Lease.
func TestLeaderElectionLeaderThatLosesItsLeaseStopsAndCampaignsAgain(t *testing.T) {
	env := newElectionEnv(t)
	a := env.start(t, "only", false)
	holder := env.waitHolder(t, 60*time.Second, "the agent leads", func(string) bool { return true })
	first := env.cluster + "-le-first"
	env.f.create(env.f.work(first, configMapWork(first)))
	env.f.waitWork(first, "applied", allApplied)

	// Someone else takes the Lease and renews it for a while, then goes.
	intruder := "intruder"
	renew := func(ctx context.Context) error {
		l := env.lease(ctx)
		if l == nil {
			return nil
		}
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.RenewTime, l.Spec.AcquireTime = &intruder, &now, &now
		_, err := env.spoke.CoordinationV1().Leases(env.leaseNamespace).Update(ctx, l, metav1.UpdateOptions{})
		return err
	}
	env.f.eventually("take the Lease", func(ctx context.Context) (bool, error) { return renew(ctx) == nil, nil })
	// Hold it longer than the renew deadline plus a margin, then check the agent has stopped writing.
	// The sleeps below are the behaviour under test: another holder renewing the Lease at its cadence.
	holdUntil := time.Now().Add(testRenewDeadline + 3*time.Second)
	for time.Now().Before(holdUntil) {
		_ = renew(t.Context())
		time.Sleep(testRetryPeriod / 2)
	}
	writes := a.writes()
	during := env.cluster + "-le-during"
	env.f.create(env.f.work(during, configMapWork(during)))
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
		_ = renew(t.Context())
		time.Sleep(testRetryPeriod / 2)
	}
	if got := a.writes(); got != writes {
		t.Errorf("the agent wrote %d times while another held its Lease; want none", got-writes)
	}
	select {
	case err := <-a.done:
		t.Fatalf("Run ended when the agent lost its Lease (%v); want it to stand by and campaign again", err)
	default:
	}

	// The intruder stops renewing: the agent leads again and applies the work created meanwhile.
	env.waitHolder(t, testLeaseDuration+10*time.Second, "the agent leads again", func(h string) bool { return h == holder })
	env.f.waitWork(during, "applied once the agent leads again", allApplied)
}
