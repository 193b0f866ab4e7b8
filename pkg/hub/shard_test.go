package hub_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
	"github.com/ferry-mc/ferry/pkg/registration"
	"github.com/ferry-mc/ferry/pkg/render"
)

// Every key has exactly one owner among n shards, and each shard gets a fair share of many keys; one
// shard (count 0 or 1) owns everything.
func TestShardOwnsEachKeyOnceAndSplitsFairly(t *testing.T) {
	const keys = 10000
	for n := 1; n <= 5; n++ {
		perShard := make([]int, n)
		for k := range keys {
			key := fmt.Sprintf("team-%d/app-%d", k%37, k)
			owners := 0
			for i := range n {
				if (hub.Shard{Index: i, Count: n}).Owns(key) {
					owners++
					perShard[i]++
				}
			}
			if owners != 1 {
				t.Fatalf("%d shards: key %q has %d owners, want 1", n, key, owners)
			}
		}
		fair := keys / n
		for i, got := range perShard {
			if got < fair*3/4 || got > fair*5/4 {
				t.Errorf("%d shards: shard %d owns %d of %d keys, want about %d", n, i, got, keys, fair)
			}
		}
	}
	if !(hub.Shard{}).Owns("any/key") {
		t.Error("the zero Shard (unsharded) does not own every key")
	}
}

// An unsharded hub keeps the Lease name existing installs elect by; each shard has a Lease of its own.
func TestShardLeaderElectionIDs(t *testing.T) {
	for _, c := range []struct {
		shard hub.Shard
		want  string
	}{
		{hub.Shard{}, "ferry-hub"},
		{hub.Shard{Count: 1}, "ferry-hub"},
		{hub.Shard{Index: 0, Count: 2}, "ferry-hub-shard-0-of-2"},
		{hub.Shard{Index: 1, Count: 2}, "ferry-hub-shard-1-of-2"},
	} {
		if got := c.shard.LeaderElectionID(); got != c.want {
			t.Errorf("Shard%+v.LeaderElectionID() = %q, want %q", c.shard, got, c.want)
		}
	}
}

// Two shards on one hub split the AppConfigs (and their Components, and the ManagedClusters whose
// conditions the hub keeps) so that each object is written by exactly its owner: while only shard 0
// runs, shard 1's AppConfigs are untouched; once both run, all are delivered, each ManifestWork written
// by its AppConfig's shard alone. Shard 0 stopping and coming back loses nothing: an AppConfig changed
// and one created meanwhile are delivered, and shard 1's works are not rewritten. Each shard runs with
// leader election under its own Lease, as `ferry-hub --leader-elect --shard-index i --shard-count 2`.
func TestShardsSplitTheHubAndARestartLosesNothing(t *testing.T) {
	f := setup(t)
	f.allowLeaderElection()
	shards := []hub.Shard{{Index: 0, Count: 2}, {Index: 1, Count: 2}}
	h := f.shardedHub(shards)

	// An AppConfig and the Component it renders share a name, hence a shard: a shard's AppConfigs do
	// not wait for another shard to number their Component's revisions.
	appName := func(k int) (string, string) { name := fmt.Sprintf("app-%d", k); return name, f.ns + "/" + name }
	apps := [][]string{namesOwned(shards[0], 5, appName), namesOwned(shards[1], 4, appName)}
	changed, late := apps[0][0], apps[0][4]
	apps[0] = apps[0][:4] // late is created while shard 0 is down
	for _, names := range apps {
		for _, name := range names {
			h.createApp(name)
		}
	}
	// ManagedClusters are cluster-scoped: keyed by their name alone.
	clusterName := func(k int) (string, string) { name := fmt.Sprintf("%s-shard-cluster-%d", f.ns, k); return name, name }
	clusterNames := [][]string{namesOwned(shards[0], 2, clusterName), namesOwned(shards[1], 2, clusterName)}
	for _, names := range clusterNames {
		for _, name := range names {
			f.addRegisteredCluster(name)
		}
	}

	h.start(0)
	for _, name := range apps[0] {
		f.waitReadyWithWorks(name)
	}
	f.waitClusterConditions(clusterNames[0]...)
	ctx := t.Context()
	for _, name := range apps[1] {
		app, err := f.app(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if controllerutil.ContainsFinalizer(app, hub.AppConfigFinalizer) || len(app.Status.Conditions) > 0 || app.Status.ObservedGeneration != 0 {
			t.Errorf("shard 0 wrote shard 1's AppConfig %s: finalizers %v, status %+v", name, app.Finalizers, app.Status)
		}
		if works, err := f.works(ctx, name); err != nil || len(works) > 0 {
			t.Errorf("shard 1's AppConfig %s has %d ManifestWorks with only shard 0 running (error %v)", name, len(works), err)
		}
		comp := &v1alpha2.Component{}
		if err := f.hub.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, comp); err != nil {
			t.Fatal(err)
		}
		if comp.Status.LatestRevision != nil {
			t.Errorf("shard 0 recorded revision %s of shard 1's Component %s", comp.Status.LatestRevision.Name, name)
		}
	}
	for _, name := range clusterNames[1] {
		if mc := f.managedCluster(name); len(mc.Status.Conditions) > 0 {
			t.Errorf("shard 0 wrote the conditions of shard 1's ManagedCluster %s: %+v", name, mc.Status.Conditions)
		}
	}
	f.checkLeases(shards[:1])

	h.start(1)
	for _, names := range apps {
		for _, name := range names {
			f.waitReadyWithWorks(name)
		}
	}
	f.waitClusterConditions(clusterNames[1]...)
	f.checkLeases(shards)
	generations := map[string]int64{} // "<cluster>/<work>" → generation
	for _, names := range apps {
		for _, name := range names {
			for _, mw := range f.mustWorks(name) {
				generations[mw.Namespace+"/"+mw.Name] = mw.Generation
			}
		}
	}

	h.stop(0)
	f.updateApp(changed, func(app *v1alpha2.ApplicationConfiguration) {
		app.Spec.Components[0].ParameterValues = []v1alpha2.ComponentParameterValue{param("image", `"nginx:2"`)}
	})
	h.createApp(late)
	h.start(0)
	f.waitReadyWithWorks(late)
	f.waitReadyWithWorks(changed)
	for _, c := range clusters {
		f.waitImage(c, changed, "nginx:2")
	}
	// Who wrote what, as the API server recorded it: each shard writes as ferry-hub-shard-<index>.
	for _, name := range append(slices.Concat(apps...), late) {
		owner := shardOf(shards, f.ns+"/"+name)
		for _, mw := range f.mustWorks(name) {
			key := mw.Namespace + "/" + mw.Name
			if was, ok := generations[key]; ok && name != changed && mw.Generation != was {
				t.Errorf("ManifestWork %s rewritten across shard 0's restart: generation %d, was %d", key, mw.Generation, was)
			}
			if mw.Labels[hub.LabelAppConfigNamespace] != f.ns || mw.Labels[hub.LabelAppConfigName] != name {
				t.Errorf("ManifestWork %s of AppConfig %s labelled %v", key, name, mw.Labels)
			}
			if got := shardWriters(mw.ManagedFields, ""); !slices.Equal(got, []string{shardManager(owner)}) {
				t.Errorf("ManifestWork %s of AppConfig %s (shard %d) written by %v, want %s alone", key, name, owner, got, shardManager(owner))
			}
		}
	}
	for i, names := range clusterNames {
		for _, name := range names {
			mc := f.managedCluster(name)
			if got := shardWriters(mc.ManagedFields, "status"); !slices.Equal(got, []string{shardManager(i)}) {
				t.Errorf("conditions of ManagedCluster %s (shard %d) written by %v, want %s alone", name, i, got, shardManager(i))
			}
		}
	}
}

// shardedHub runs the hub controllers as several shards, each a manager of its own in the test
// process, started and stopped one by one.
type shardedHub struct {
	f       *fixture
	shards  []hub.Shard
	running map[int]func() // shard index → stop
	created []string       // AppConfigs to delete when the test ends
}

// shardedHub returns the shards, none running yet. When the test ends, every AppConfig created with
// createShardedApp is deleted with all shards running (each lets go of its own), then they stop.
func (f *fixture) shardedHub(shards []hub.Shard) *shardedHub {
	h := &shardedHub{f: f, shards: shards, running: map[int]func(){}}
	// Held once for all shards: a second RLock while a counting test waits for the lock would wait forever.
	hub.ManifestWorkChecksCounted.RLock()
	f.t.Cleanup(func() {
		defer hub.ManifestWorkChecksCounted.RUnlock()
		for i := range shards {
			if h.running[i] == nil {
				h.start(i)
			}
		}
		for _, name := range h.created {
			f.deleteApp(name)
		}
		for i := range shards {
			h.stop(i)
		}
	})
	return h
}

// start runs shard i: the hub controllers with its Options.Shard, electing its leader under its own
// Lease in the test's namespace, writing as ferry-hub-shard-<i>.
func (h *shardedHub) start(i int) {
	f := h.f
	f.t.Helper()
	if h.running[i] != nil {
		f.t.Fatalf("shard %d runs already", i)
	}
	s := h.shards[i]
	cfg := rest.CopyConfig(f.hubController)
	cfg.UserAgent = shardManager(i)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  f.scheme,
		Cache:                   hub.CacheOptions(), // the cache ferry-hub runs with
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		Controller:              config.Controller{SkipNameValidation: ptr.To(true)},
		LeaderElection:          true,
		LeaderElectionID:        s.LeaderElectionID(),
		LeaderElectionNamespace: f.ns,
		// A restarted shard takes its Lease over at once instead of waiting for it to expire.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	o := hubOptions(render.ApplyOnceOff)
	o.Shard = s
	if err := hub.SetupWithManager(mgr, o); err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	h.running[i] = func() {
		cancel()
		if err := <-done; err != nil {
			f.t.Errorf("shard %d: %v", i, err)
		}
	}
}

// stop stops shard i and waits until its manager has ended.
func (h *shardedHub) stop(i int) {
	if stop := h.running[i]; stop != nil {
		stop()
		delete(h.running, i)
	}
}

// shardManager is the field manager (user agent) shard i writes as in these tests.
func shardManager(i int) string { return fmt.Sprintf("ferry-hub-shard-%d", i) }

// shardOf is the index of the shard owning key.
func shardOf(shards []hub.Shard, key string) int {
	for i, s := range shards {
		if s.Owns(key) {
			return i
		}
	}
	return -1
}

// shardWriters are the shards' field managers among entries of subresource ("" for the object itself),
// sorted, each once: the agents' entries (their finalizer, the status they report) are not the hub's.
func shardWriters(entries []metav1.ManagedFieldsEntry, subresource string) []string {
	var out []string
	for _, e := range entries {
		if e.Subresource == subresource && strings.HasPrefix(e.Manager, "ferry-hub-shard-") {
			out = append(out, e.Manager)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// namesOwned are the first n names, of nameOf(0), nameOf(1), ..., whose key s owns.
func namesOwned(s hub.Shard, n int, nameOf func(k int) (name, key string)) []string {
	var out []string
	for k := 0; len(out) < n; k++ {
		if name, key := nameOf(k); s.Owns(key) {
			out = append(out, name)
		}
	}
	return out
}

// createApp creates a Component and an AppConfig of that name delivering it to both clusters.
func (h *shardedHub) createApp(name string) {
	f := h.f
	f.t.Helper()
	f.mustCreate(f.hub, f.webComponent(name, "nginx:1"),
		f.appConfig(name, onClusters(clusters...), v1alpha2.ApplicationConfigurationComponent{ComponentName: name}))
	h.created = append(h.created, name)
}

// waitReadyWithWorks waits until the AppConfig is Ready at its generation with a ManifestWork on every
// cluster.
func (f *fixture) waitReadyWithWorks(name string) {
	f.t.Helper()
	f.waitApp(name, "Ready", isReady)
	f.eventually("ManifestWorks of "+name+" on every cluster", func(ctx context.Context) (bool, error) {
		works, err := f.works(ctx, name)
		return len(works) == len(clusters), err
	})
}

// mustWorks lists the AppConfig's ManifestWorks.
func (f *fixture) mustWorks(app string) []workv1.ManifestWork {
	f.t.Helper()
	works, err := f.works(f.t.Context(), app)
	if err != nil {
		f.t.Fatal(err)
	}
	return works
}

// addRegisteredCluster registers a ManagedCluster as `ferry-hub clusters add` does (no agent ever
// renews its Lease), deleted when the test ends.
func (f *fixture) addRegisteredCluster(name string) {
	f.t.Helper()
	mc := &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{registration.RegisteredByLabel: registration.RegisteredByFerry}},
		Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
	}
	f.mustCreate(f.hub, mc)
	f.t.Cleanup(func() {
		if err := f.hub.Delete(context.Background(), mc); client.IgnoreNotFound(err) != nil {
			f.t.Errorf("delete ManagedCluster %s: %v", name, err)
		}
	})
}

func (f *fixture) managedCluster(name string) *clusterv1.ManagedCluster {
	f.t.Helper()
	mc := &clusterv1.ManagedCluster{}
	if err := f.hub.Get(f.t.Context(), client.ObjectKey{Name: name}, mc); err != nil {
		f.t.Fatal(err)
	}
	return mc
}

// waitClusterConditions waits until the hub has written the clusters' HubAccepted condition.
func (f *fixture) waitClusterConditions(names ...string) {
	f.t.Helper()
	for _, name := range names {
		f.eventually("conditions of ManagedCluster "+name, func(ctx context.Context) (bool, error) {
			mc := &clusterv1.ManagedCluster{}
			if err := f.hub.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
				return false, err
			}
			for _, c := range mc.Status.Conditions {
				if c.Type == clusterv1.ManagedClusterConditionHubAccepted {
					return true, nil
				}
			}
			return false, nil
		})
	}
}

// allowLeaderElection lets the hub controllers' credential elect leaders in the test's namespace with
// the Role deploy/hub ships for ferry-system.
func (f *fixture) allowLeaderElection() {
	f.t.Helper()
	data, err := os.ReadFile("../../deploy/hub/leader-election.yaml")
	if err != nil {
		f.t.Fatal(err)
	}
	role := &rbacv1.Role{}
	if err := yaml.UnmarshalStrict([]byte(strings.SplitN(string(data), "\n---\n", 2)[0]), role); err != nil {
		f.t.Fatal(err)
	}
	role.Namespace = f.ns
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: f.ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: hubControllerUser}},
	}
	f.mustCreate(f.hub, role, binding)
}

// checkLeases checks that each running shard holds a Lease of its own in the test's namespace.
func (f *fixture) checkLeases(running []hub.Shard) {
	f.t.Helper()
	holders := map[string]string{} // holder → Lease
	for _, s := range running {
		lease := &coordinationv1.Lease{}
		if err := f.hub.Get(f.t.Context(), client.ObjectKey{Namespace: f.ns, Name: s.LeaderElectionID()}, lease); err != nil {
			f.t.Fatalf("Lease of shard %s: %v", s, err)
		}
		holder := ptr.Deref(lease.Spec.HolderIdentity, "")
		if holder == "" || holders[holder] != "" {
			f.t.Errorf("Lease %s held by %q (Leases held so far: %v)", lease.Name, holder, holders)
		}
		holders[holder] = lease.Name
	}
}
