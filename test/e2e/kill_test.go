package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/ferry-mc/ferry/internal/testing/deployrunner"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

// killRound is one round of a kill test: a change written to the hub, and the process killed with
// SIGKILL a random delay (below killWithin) after the change starts.
type killRound struct {
	what       string
	killWithin time.Duration
	change     func() func(context.Context) error
}

// roundTimeout bounds how long the world may take to converge after a restart; it is generous for a
// loaded 2-core machine, a healthy round takes a few seconds.
const roundTimeout = 2 * time.Minute

// ferry-agent killed with SIGKILL twenty times at random points — while 200 works are applied, while
// manifests are removed from works, while works are deleted — and started again each time: after every
// round each ConfigMap a work holds is on the spoke exactly once, with the UID it was first created with
// (the agent deleted nothing it should keep), those of removed manifests and deleted works are gone,
// every work reports Applied at its generation, and each work has one AppliedManifestWork recording
// exactly its objects. The last rounds delete every work, and nothing is left behind.
func TestAgentSurvivesKill9AtRandomPoints(t *testing.T) {
	t.Parallel() // brings clusters of its own: see doc.go
	env := localcluster.StartForTest(t, localcluster.Options{
		// The hub's token controller fills the token Secret of the agent's hub credential.
		Hub: localcluster.ClusterSpec{ControllerManager: true},
		// The agent deletes with Foreground propagation: the foregroundDeletion finalizer is removed by
		// kube-controller-manager's garbage collector, even for an object with no dependents.
		Spokes: []localcluster.ClusterSpec{{Name: "cluster1", ControllerManager: true}},
	})
	ctx := t.Context()
	spoke := env.Spokes[0]
	spokeKube := kubernetes.NewForConfigOrDie(fastClient(spoke.Config))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: killNamespace}}
	if _, err := spokeKube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	world := &agentWorld{
		works: workclient.NewForConfigOrDie(fastClient(env.Hub.Config)).WorkV1().ManifestWorks(spoke.Name),
		amws:  workclient.NewForConfigOrDie(fastClient(spoke.Config)).WorkV1().AppliedManifestWorks(),
		spoke: spokeKube,
		value: "v0",
	}
	const works, withTwoManifests = 200, 60
	world.plan(works, withTwoManifests)

	bin := buildBinaries(t, "ferry-agent")
	if t.Failed() {
		t.FailNow()
	}
	agent := startShippedAgent(t, env, spoke, filepath.Join(bin, "ferry-agent"), filepath.Join(logDir(t), "ferry-agent.log"),
		// Leader election stays on, as shipped, but a killed agent leaves its Lease held: the shipped
		// 15s lease would make every restart wait that long before it applies anything.
		deployrunner.Add("leader-election-lease-duration", "4s"),
		deployrunner.Add("leader-election-renew-deadline", "3s"),
		deployrunner.Add("leader-election-retry-period", "1s"))

	rounds := []killRound{{what: fmt.Sprintf("create %d works", works), killWithin: 4 * time.Second,
		change: func() func(context.Context) error { return world.createAll }}}
	for i := 1; i <= 6; i++ {
		rounds = append(rounds, killRound{what: fmt.Sprintf("change all %d works to v%d", works, i), killWithin: 4 * time.Second,
			change: func() func(context.Context) error { return world.setValue(fmt.Sprintf("v%d", i)) }})
	}
	for range 6 {
		rounds = append(rounds, killRound{what: "remove the second manifest from 10 works", killWithin: 1500 * time.Millisecond,
			change: func() func(context.Context) error { return world.removeSecondManifest(10) }})
	}
	const deleteRounds = 7
	for range deleteRounds {
		rounds = append(rounds, killRound{what: fmt.Sprintf("delete %d works", (works+deleteRounds-1)/deleteRounds), killWithin: 3 * time.Second,
			change: func() func(context.Context) error {
				return world.deleteWorks((works + deleteRounds - 1) / deleteRounds)
			}})
	}

	runKillRounds(t, agent, rounds, world.check, world.recordUIDs)
	if len(world.held) != 0 {
		t.Fatalf("the rounds left %d works undeleted", len(world.held))
	}
	// The last round converged with no work left: no ConfigMap of the test and no AppliedManifestWork
	// is on the spoke, and no ManifestWork on the hub (check reports each as a problem).
}

// ferry-hub killed with SIGKILL at random points while it delivers 100 AppConfigs to two clusters,
// while their parameter changes, while half of them leave a cluster and while they are deleted, and
// started again each time: after every round there is exactly one ManifestWork per AppConfig and placed
// cluster, labelled for its AppConfig and carrying the current value, with the UID it was first created
// with (never deleted and re-created, which would make the agent delete and re-create the application);
// none of a cluster an AppConfig left; and once the AppConfigs are deleted, no ManifestWork at all.
func TestHubSurvivesKill9AtRandomPoints(t *testing.T) {
	t.Parallel() // brings clusters of its own: see doc.go
	env := localcluster.StartForTest(t, localcluster.Options{})
	hubCfg := fastClient(env.Hub.Config)
	clusters := []string{"cluster1", "cluster2"}
	registerClusters(t, hubCfg, clusters)
	dyn := dynamic.NewForConfigOrDie(hubCfg)
	bin := buildBinaries(t, "ferry-hub")
	if t.Failed() {
		t.FailNow()
	}
	hub := startShippedHub(t, env.Hub, filepath.Join(bin, "ferry-hub"), filepath.Join(logDir(t), "ferry-hub.log"),
		// deploy/hub elects a leader, and ferry-hub has no flag for the lease's 15s: every restart after
		// a SIGKILL would wait out the lease its killed run still holds. One replica needs no election.
		deployrunner.Set("leader-elect", "false"))
	createKillComponent(t, dyn)

	world := &hubWorld{apps: dyn.Resource(appConfigGVR), works: workclient.NewForConfigOrDie(hubCfg).WorkV1(), value: "v0"}
	const apps = 100
	world.plan(apps, clusters)
	rounds := []killRound{
		{what: fmt.Sprintf("create %d AppConfigs on %v", apps, clusters), killWithin: 4 * time.Second,
			change: func() func(context.Context) error { return world.createAll }},
		{what: "change every AppConfig's parameter to v1", killWithin: 3 * time.Second,
			change: func() func(context.Context) error { return world.setValue("v1") }},
		{what: "change every AppConfig's parameter to v2", killWithin: 3 * time.Second,
			change: func() func(context.Context) error { return world.setValue("v2") }},
		{what: "place half of the AppConfigs on cluster1 only", killWithin: 3 * time.Second,
			change: func() func(context.Context) error { return world.narrowPlacement(apps/2, "cluster1") }},
		{what: "change every AppConfig's parameter to v3", killWithin: 3 * time.Second,
			change: func() func(context.Context) error { return world.setValue("v3") }},
		{what: "delete every AppConfig", killWithin: 3 * time.Second,
			change: func() func(context.Context) error { return world.deleteAll() }},
	}
	runKillRounds(t, hub, rounds, world.check, world.recordUIDs)
	// The last round converged with no AppConfig left: no ManifestWork is on the hub (check reports
	// each left-over work as a problem).
}

// runKillRounds runs the rounds one after another: the change, the kill at a random point and the
// restart, then the wait until check finds nothing wrong. After the first round the UIDs of what is
// there are recorded, to be kept for as long as the world wants the objects.
func runKillRounds(t *testing.T, p *ferryProcess, rounds []killRound,
	check func(context.Context) (problems, violations []string, err error), recordUIDs func(context.Context) error) {
	t.Helper()
	rng := rand.New(rand.NewPCG(killSeed(t), 0))
	started := time.Now()
	for i, r := range rounds {
		name := fmt.Sprintf("round %d/%d (%s)", i+1, len(rounds), r.what)
		roundStart := time.Now()
		var outstanding []string
		delay := killDuring(t, p, rng, r.killWithin, r.change(), func() {
			// While the process is down: how much of the change it had not done, to show that the
			// kill landed in the middle of it.
			problems, _, err := check(t.Context())
			if err == nil {
				outstanding = problems
			}
		})
		restarted := time.Now()
		converge(t, name, roundTimeout, p, check)
		if i == 0 {
			if err := recordUIDs(t.Context()); err != nil {
				t.Fatalf("%s: record UIDs: %v", name, err)
			}
		}
		example := ""
		if len(outstanding) > 0 {
			example = " (such as: " + outstanding[0] + ")"
		}
		t.Logf("%s: killed %s after the change began with %d things undone%s; converged %s after the restart; round took %s",
			name, delay.Round(time.Millisecond), len(outstanding), example, time.Since(restarted).Round(time.Millisecond), time.Since(roundStart).Round(time.Millisecond))
	}
	t.Logf("%s killed and restarted %d times, survived every round: nothing lost, duplicated, left over or wrongly deleted; %s in all",
		p.Name, len(rounds), time.Since(started).Round(time.Millisecond))
}

// fastClient is an admin client configuration without client-go's default limit of 5 requests a
// second, which would make the test's own writes the slowest part.
func fastClient(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = 500, 1000
	return c
}

// registerClusters does on the hub what accepting a joined cluster does — a ManagedCluster and the
// namespace of its ManifestWorks — for clusters without an API server of their own: the hub test
// watches only what ferry-hub writes on the hub.
func registerClusters(t *testing.T, cfg *rest.Config, names []string) {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(cfg)
	mcs := clusterclient.NewForConfigOrDie(cfg)
	for _, name := range names {
		if _, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
		if _, err := mcs.ClusterV1().ManagedClusters().Create(t.Context(), mc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// createKillComponent creates the Component every AppConfig of the hub test renders and waits until
// ferry-hub has recorded its first revision, so that the first round is about delivery.
func createKillComponent(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: "core.oam.dev", Version: "v1alpha2", Resource: "components"}
	comp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "core.oam.dev/v1alpha2", "kind": "Component",
		"metadata": map[string]any{"name": killComponent, "namespace": killAppNamespace},
		"spec": map[string]any{
			"workload": map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"labels": map[string]any{killLabel: "hub"}},
				"data":     map[string]any{"value": "unset"},
			},
			"parameters": []any{map[string]any{"name": "value", "fieldPaths": []any{"data.value"}}},
		},
	}}
	if _, err := dyn.Resource(gvr).Namespace(killAppNamespace).Create(t.Context(), comp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "ferry-hub records the component's first revision", time.Minute, func(ctx context.Context) (bool, error) {
		got, err := dyn.Resource(gvr).Namespace(killAppNamespace).Get(ctx, killComponent, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		rev, _, _ := unstructured.NestedString(got.Object, "status", "latestRevision", "name")
		return rev != "", nil
	})
}
