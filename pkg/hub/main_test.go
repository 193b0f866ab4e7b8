package hub_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/internal/statusview"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/pkg/agent"
	"github.com/ferry-mc/ferry/pkg/agent/process"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
	"github.com/ferry-mc/ferry/pkg/render"
)

// The hub and the two managed clusters the package's integration tests share, started by the first
// test that needs them. Both spokes run kube-controller-manager: the agent deletes with foreground
// propagation, which needs the garbage collector. Each spoke has a real agent for the whole package,
// with a hub credential scoped to its cluster namespace as in production. The hub controllers are not
// shared: a test runs its own manager (startHub) with the options it is about, so the tests on the
// shared clusters run one at a time (setup), beside the tests with a hub of their own, or none. Every
// test works in a namespace of its own, which exists on the hub and on both spokes, and deletes its
// AppConfigs, waiting for their ManifestWorks to go, before the next one.
// The trait kinds the tests use are served everywhere from the start (see ClusterSpec.CRDs).
var shared = &localcluster.Shared{Options: localcluster.Options{
	Hub: localcluster.ClusterSpec{Name: "hub", CRDs: traitCRDs()},
	Spokes: []localcluster.ClusterSpec{
		{Name: "cluster1", ControllerManager: true, CRDs: traitCRDs()},
		{Name: "cluster2", ControllerManager: true, CRDs: traitCRDs()},
	},
}}

// allAtOnce is how many tests run at once unless -parallel says: every test that needs clusters runs in
// parallel, those on the shared clusters waiting their turn (onSharedClusters) while holding their slot,
// so the limit is above the package's count of tests; those with clusters of their own run while the
// shared ones wait, instead of after all of them.
const allAtOnce = 200

func TestMain(m *testing.M) {
	localcluster.RunManyAtOnce(allAtOnce)
	ctrl.SetLogger(testLog("hub"))
	os.Exit(localcluster.RunShared(m, shared))
}

// clusters are the managed clusters, registered on the hub as ManagedClusters of these names.
var clusters = []string{"cluster1", "cluster2"}

// testLog is a logger for what runs for the whole package (agents, hub managers): set
// FERRY_TEST_LOG=1 to see their logs on stderr.
func testLog(name string) logr.Logger {
	if os.Getenv("FERRY_TEST_LOG") == "" {
		return logr.Discard()
	}
	return funcr.New(func(prefix, args string) {
		fmt.Fprintln(os.Stderr, time.Now().Format("15:04:05.000"), prefix, args)
	}, funcr.Options{}).WithName(name)
}

// The trait kinds the tests use, served on the hub and on both spokes: ScalerTrait points at its
// workload; RolloutTrait does too and is revision-enabled (a rollout trait).
const traitGroup = "example.ferry.io"

var (
	scalerTraitGVK  = schema.GroupVersionKind{Group: traitGroup, Version: "v1", Kind: "ScalerTrait"}
	rolloutTraitGVK = schema.GroupVersionKind{Group: traitGroup, Version: "v1", Kind: "RolloutTrait"}
)

func traitCRDs() []*apiextensionsv1.CustomResourceDefinition {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, gvk := range []schema.GroupVersionKind{scalerTraitGVK, rolloutTraitGVK} {
		singular := strings.ToLower(gvk.Kind)
		out = append(out, &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: singular + "s." + gvk.Group},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: gvk.Group,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: gvk.Kind, ListKind: gvk.Kind + "List", Plural: singular + "s", Singular: singular},
				Scope: apiextensionsv1.NamespaceScoped,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: gvk.Version, Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type:       "object",
						Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)}},
					}},
				}},
			},
		})
	}
	return out
}

func traitDefinitions() []*v1alpha2.TraitDefinition {
	return []*v1alpha2.TraitDefinition{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "scalertraits." + traitGroup},
			Spec:       v1alpha2.TraitDefinitionSpec{Reference: v1alpha2.DefinitionReference{Name: "scalertraits." + traitGroup}, WorkloadRefPath: "spec.workloadRef"},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "rollouttraits." + traitGroup},
			Spec: v1alpha2.TraitDefinitionSpec{Reference: v1alpha2.DefinitionReference{Name: "rollouttraits." + traitGroup},
				RevisionEnabled: true, WorkloadRefPath: "spec.workloadRef"},
		},
	}
}

// fleet is the shared environment once set up: spokes registered, trait definitions created, agents
// running.
type fleet struct {
	env    *localcluster.Environment
	scheme *runtime.Scheme
	hub    client.Client // admin client of the hub
	// hubController reaches the hub as the hub controllers do in production: with deploy/hub's role.
	hubController *rest.Config
	spokes        map[string]client.Client // admin clients of the spokes, by cluster name
}

var (
	fleetOnce sync.Once
	theFleet  *fleet
	fleetErr  error
)

// testFleet returns the shared environment, setting it up on first use.
func testFleet(t testing.TB) *fleet {
	t.Helper()
	env := shared.Get(t)
	fleetOnce.Do(func() { theFleet, fleetErr = setUpFleet(env) })
	if fleetErr != nil {
		t.Fatalf("set up the hub and its spokes: %v", fleetErr)
	}
	return theFleet
}

func setUpFleet(env *localcluster.Environment) (*fleet, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	scheme, err := hub.Scheme()
	if err != nil {
		return nil, err
	}
	f := &fleet{env: env, scheme: scheme, spokes: map[string]client.Client{}}
	if f.hub, err = client.New(env.Hub.Config, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	if err := env.RegisterSpokes(ctx); err != nil {
		return nil, err
	}
	for _, def := range traitDefinitions() {
		if err := f.hub.Create(ctx, def); err != nil {
			return nil, fmt.Errorf("create TraitDefinition %s: %w", def.Name, err)
		}
	}
	for _, name := range clusters {
		if f.spokes[name], err = client.New(env.Spoke(name).Config, client.Options{Scheme: scheme}); err != nil {
			return nil, err
		}
	}
	if f.hubController, err = hubControllerConfig(ctx, env); err != nil {
		return nil, err
	}
	return f, startAgents(ctx, env)
}

// hubControllerUser is who the hub controllers run as in these tests.
const hubControllerUser = "system:ferry:hub-controller"

// hubControllerConfig is a credential of the hub limited to the shipped deploy/hub/clusterrole.yaml,
// plus, as its comment tells users to add, the patch-trait kinds the tests use: every test proves
// that the shipped role is enough.
func hubControllerConfig(ctx context.Context, env *localcluster.Environment) (*rest.Config, error) {
	data, err := os.ReadFile("../../deploy/hub/clusterrole.yaml")
	if err != nil {
		return nil, err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		return nil, err
	}
	cfg, err := env.HubControllerConfig(ctx, hubControllerUser, role)
	if err != nil {
		return nil, err
	}
	patchTraits := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "ferry-hub-test-patch-traits"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{patchTraitGroup}, Resources: []string{"nodeselectors", "securitycontexts"},
			Verbs: []string{"get", "list", "watch", "create", "update", "delete"}}},
	}
	if _, err := env.HubControllerConfig(ctx, hubControllerUser, patchTraits); err != nil {
		return nil, err
	}
	return cfg, nil
}

// startAgents runs a real agent for every spoke until the shared environment stops. Each joins the
// hub as `clusteradm join` does: a hub-kubeconfig directory whose credential the shipped ClusterRole
// limits to the cluster's namespace.
func startAgents(ctx context.Context, env *localcluster.Environment) error {
	data, err := os.ReadFile("../../deploy/agent/hub-clusterrole.yaml")
	if err != nil {
		return err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		return err
	}
	agentCtx, stop := context.WithCancel(context.Background())
	var running sync.WaitGroup
	errs := make(chan error, len(clusters))
	shared.BeforeStop(func() error {
		stop()
		running.Wait()
		close(errs)
		var all []error
		for err := range errs {
			all = append(all, err)
		}
		return errors.Join(all...)
	})
	// Each agent says nil here once it is ready, and an error when it ends.
	started := make(chan error, 2*len(clusters))
	for _, name := range clusters {
		dir := filepath.Join(env.Dir, "agents", name, "hub-kubeconfig")
		if err := env.WriteHubKubeconfigDir(ctx, name, role.DeepCopy(), dir); err != nil {
			return fmt.Errorf("join %s: %w", name, err)
		}
		opts := process.NewOptions()
		opts.HubKubeconfigDir = dir
		hubCfg, err := opts.HubConfig()
		if err != nil {
			return err
		}
		spokeCfg := rest.CopyConfig(env.Spoke(name).Config)
		spokeCfg.QPS, spokeCfg.Burst = process.DefaultKubeAPIQPS, process.DefaultKubeAPIBurst
		clients, err := process.NewAgentClients(hubCfg, spokeCfg)
		if err != nil {
			return err
		}
		cfg := agent.Config{
			ClusterName:        name,
			AgentID:            name + "-agent",
			Clients:            clients,
			Workers:            4,
			StatusSyncInterval: time.Minute,
			Log:                testLog("agent-" + name),
			Ready:              func() { started <- nil },
		}
		running.Add(1)
		go func() {
			defer running.Done()
			err := agent.Start(agentCtx, cfg)
			if err != nil {
				errs <- fmt.Errorf("agent of %s: %w", name, err)
			}
			started <- fmt.Errorf("agent of %s ended: %v", name, err)
		}()
	}
	for range clusters {
		select {
		case err := <-started:
			if err != nil {
				return err
			}
		case <-ctx.Done():
			return fmt.Errorf("agents not ready: %w", ctx.Err())
		}
	}
	return nil
}

// fixture is one test's view of the shared environment: its namespace (on the hub and on both spokes)
// and helpers that poll with deadlines.
type fixture struct {
	*fleet
	t          testing.TB
	ns         string
	hubRunning bool
	// stopHub stops the hub controllers startHub started, as a hub process that exits.
	stopHub   func()
	hubWrites *atomic.Int64 // requests of the hub controllers other than reads
	// hubEvents are the events the hub controllers recorded, as they recorded them.
	hubEvents *recordedEvents
}

// countWrites counts every request sent through cfg that is not a read.
func countWrites(cfg *rest.Config) *atomic.Int64 {
	writes := &atomic.Int64{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet {
				writes.Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	return writes
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// onSharedClusters is held by the test that runs on the shared clusters: one at a time, since each
// runs hub controllers of its own that act on every AppConfig and cluster of the shared hub.
var onSharedClusters sync.Mutex

// setup gives the test a namespace of its own on the hub and on both spokes, bound to OCM's global
// ManagedClusterSet: its AppConfigs may reach every cluster. The test runs beside those with clusters
// of their own, and alone on the shared ones until it ends.
func setup(t testing.TB) *fixture {
	t.Helper()
	if t, ok := t.(*testing.T); ok { // benchmarks run one at a time anyway
		t.Parallel()
	}
	onSharedClusters.Lock()
	t.Cleanup(onSharedClusters.Unlock) // first registered, last run: after the test's own cleanups
	f := &fixture{fleet: testFleet(t), t: t, ns: "t-" + strings.ToLower(rand.String(6))}
	f.mustCreate(f.hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}})
	if err := f.env.Hub.BindGlobalClusterSet(t.Context(), f.ns); err != nil {
		t.Fatal(err)
	}
	for _, name := range clusters {
		f.mustCreate(f.spokes[name], &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}})
	}
	t.Cleanup(func() {
		// The spokes' namespace controllers remove what is left; the hub has none, and its namespace
		// (components, revisions) stays for the environment's lifetime.
		for _, name := range clusters {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}
			if err := f.spokes[name].Delete(context.Background(), ns); client.IgnoreNotFound(err) != nil {
				t.Errorf("delete namespace %s on %s: %v", f.ns, name, err)
			}
		}
	})
	return f
}

// startHub runs the hub controllers with o against the shared hub until the test ends.
func (f *fixture) startHub(o hub.Options) {
	f.t.Helper()
	if f.hubRunning {
		f.t.Fatal("the hub controllers run already")
	}
	cfg := rest.CopyConfig(f.hubController)
	// ferry-hub's own pace (--kube-api-qps, --kube-api-burst), not client-go's default of 5 a second.
	cfg.QPS, cfg.Burst = hub.DefaultKubeAPIQPS, hub.DefaultKubeAPIBurst
	f.hubWrites = countWrites(cfg)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 f.scheme,
		Cache:                  hub.CacheOptions(), // the cache ferry-hub runs with
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Each test runs the same controllers in a manager of its own.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.hubEvents = &recordedEvents{}
	if err := hub.SetupWithManager(recordingManager{Manager: mgr, recorded: f.hubEvents}, o); err != nil {
		f.t.Fatal(err)
	}
	hub.ManifestWorkChecksCounted.RLock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	f.hubRunning = true
	if f.stopHub == nil {
		// One cleanup, registered before any AppConfig's, stops whichever hub runs last: an AppConfig
		// is deleted while the hub that lets it go still runs.
		f.t.Cleanup(func() { f.stopHub() })
	}
	stopped := false
	f.stopHub = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			f.t.Errorf("hub manager: %v", err)
		}
		hub.ManifestWorkChecksCounted.RUnlock()
		f.hubRunning = false
	}
}

// hubOptions are the hub's defaults with an --apply-once-only mode.
func hubOptions(mode render.ApplyOnceOnly) hub.Options {
	return hub.Options{ApplyOnceOnly: mode, RevisionsKept: hub.DefaultRevisionsKept}
}

func (f *fixture) mustCreate(c client.Client, objs ...client.Object) {
	f.t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			f.t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// createApp creates an AppConfig on the hub; when the test ends it is deleted, and the cleanup waits
// until it and its ManifestWorks are gone (their objects removed from the spokes), so that no later
// test's hub renders it again. The hub controllers must run: they let it go.
func (f *fixture) createApp(app *v1alpha2.ApplicationConfiguration) {
	f.t.Helper()
	if !f.hubRunning {
		f.t.Fatal("start the hub controllers before creating AppConfigs: deleting them at the end needs them")
	}
	f.mustCreate(f.hub, app)
	f.t.Cleanup(func() { f.deleteApp(app.Name) })
}

// deleteApp deletes an AppConfig and waits until it and its ManifestWorks are gone.
func (f *fixture) deleteApp(name string) {
	f.t.Helper()
	app := &v1alpha2.ApplicationConfiguration{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name}}
	if err := f.hub.Delete(context.Background(), app); client.IgnoreNotFound(err) != nil {
		f.t.Errorf("delete AppConfig %s: %v", name, err)
		return
	}
	f.eventually("AppConfig "+name+" and its ManifestWorks gone", func(ctx context.Context) (bool, error) {
		works, err := f.works(ctx, name)
		if err != nil || len(works) > 0 {
			return false, err
		}
		err = f.hub.Get(ctx, client.ObjectKeyFromObject(app), app)
		return apierrors.IsNotFound(err), nil
	})
}

// works lists the ManifestWorks of an AppConfig of the test's namespace, in every cluster namespace.
func (f *fixture) works(ctx context.Context, app string) ([]workv1.ManifestWork, error) {
	list := &workv1.ManifestWorkList{}
	err := f.hub.List(ctx, list, client.MatchingLabels{hub.LabelAppConfigNamespace: f.ns, hub.LabelAppConfigName: app})
	return list.Items, err
}

// eventually polls cond every 50ms until it holds, failing the test after 30s.
func (f *fixture) eventually(what string, cond func(ctx context.Context) (bool, error)) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var lastErr error
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			lastErr = err // API errors are retried until the deadline
		}
		return ok && err == nil, nil
	})
	if err != nil {
		f.t.Fatalf("%s: %v (last error: %v)", what, err, lastErr)
	}
}

// consistently polls cond every 50ms for d and fails the test as soon as it does not hold.
func (f *fixture) consistently(what string, d time.Duration, cond func(ctx context.Context) (bool, error)) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var broke error
	_ = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		// Each check gets a deadline of its own, so that the end of the period does not cut it short.
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		ok, err := cond(cctx)
		switch {
		case err != nil:
			broke = err
		case !ok:
			broke = errors.New("no longer holds")
		}
		return broke != nil, nil
	})
	if broke != nil {
		f.t.Fatalf("%s, for %s: %v", what, d, broke)
	}
}

// app reads an AppConfig of the test's namespace.
func (f *fixture) app(ctx context.Context, name string) (*v1alpha2.ApplicationConfiguration, error) {
	app := &v1alpha2.ApplicationConfiguration{}
	err := f.hub.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, app)
	return app, err
}

// waitApp polls an AppConfig until check passes on it, and returns it.
func (f *fixture) waitApp(name, what string, check func(*v1alpha2.ApplicationConfiguration) bool) *v1alpha2.ApplicationConfiguration {
	f.t.Helper()
	var last *v1alpha2.ApplicationConfiguration
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		app, err := f.app(ctx, name)
		if err != nil {
			return false, nil
		}
		last = app
		return check(app), nil
	})
	if err != nil {
		var status []byte
		if last != nil {
			status, _ = yaml.Marshal(last.Status)
		}
		f.t.Fatalf("AppConfig %s: %s: %v; status:\n%s\nworkloads on the spokes:\n%s", name, what, err, status, f.spokeWorkloads())
	}
	return last
}

// spokeWorkloads says where the workloads of the test's namespace stand on each spoke — Deployments and
// their pods as kube-controller-manager, kube-scheduler and kwok left them, the nodes' readiness and
// taints, the namespace's warning events — so that a wait that ran out names the step that stalled.
func (f *fixture) spokeWorkloads() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	for _, cluster := range clusters {
		c := f.spokes[cluster]
		fmt.Fprintf(&b, "%s:\n", cluster)
		deployments := &appsv1.DeploymentList{}
		if err := c.List(ctx, deployments, client.InNamespace(f.ns)); err != nil {
			fmt.Fprintf(&b, "  Deployments: %v\n", err)
		}
		for _, d := range deployments.Items {
			fmt.Fprintf(&b, "  Deployment %s: generation %d observed %d, replicas %d ready %d available %d",
				d.Name, d.Generation, d.Status.ObservedGeneration, d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas)
			for _, c := range d.Status.Conditions {
				fmt.Fprintf(&b, "; %s=%s %s", c.Type, c.Status, c.Reason)
			}
			b.WriteString("\n")
		}
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(f.ns)); err != nil {
			fmt.Fprintf(&b, "  Pods: %v\n", err)
		}
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "  Pod %s: node %q, phase %s, created %s", p.Name, p.Spec.NodeName, p.Status.Phase, p.CreationTimestamp.Format(time.TimeOnly))
			for _, c := range p.Status.Conditions {
				fmt.Fprintf(&b, "; %s=%s at %s", c.Type, c.Status, c.LastTransitionTime.Format(time.TimeOnly))
				if c.Message != "" {
					fmt.Fprintf(&b, " (%s)", c.Message)
				}
			}
			b.WriteString("\n")
		}
		nodes := &corev1.NodeList{}
		if err := c.List(ctx, nodes); err != nil {
			fmt.Fprintf(&b, "  Nodes: %v\n", err)
		}
		for _, n := range nodes.Items {
			ready := "unknown"
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					ready = fmt.Sprintf("%s since %s", c.Status, c.LastTransitionTime.Format(time.TimeOnly))
				}
			}
			fmt.Fprintf(&b, "  Node %s: Ready %s, taints %v\n", n.Name, ready, n.Spec.Taints)
		}
		events := &corev1.EventList{}
		if err := c.List(ctx, events, client.InNamespace(f.ns)); err != nil {
			fmt.Fprintf(&b, "  Events: %v\n", err)
		}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning {
				fmt.Fprintf(&b, "  Warning %s %s/%s: %s (%d times, last %s)\n", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message, e.Count, e.LastTimestamp.Format(time.TimeOnly))
			}
		}
	}
	return b.String()
}

// updateApp changes an AppConfig with fn, retrying on conflicts.
func (f *fixture) updateApp(name string, fn func(*v1alpha2.ApplicationConfiguration)) {
	f.t.Helper()
	f.eventually("update AppConfig "+name, func(ctx context.Context) (bool, error) {
		app, err := f.app(ctx, name)
		if err != nil {
			return false, err
		}
		fn(app)
		return true, f.hub.Update(ctx, app)
	})
}

// updateComponent changes a Component with fn, retrying on conflicts.
func (f *fixture) updateComponent(name string, fn func(*v1alpha2.Component)) {
	f.t.Helper()
	// A merge patch of what fn changed: the hub writes the Component's status meanwhile, and an update
	// would be refused for it and tried again.
	f.eventually("update Component "+name, func(ctx context.Context) (bool, error) {
		comp := &v1alpha2.Component{}
		if err := f.hub.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, comp); err != nil {
			return false, err
		}
		read := comp.DeepCopy()
		fn(comp)
		return true, f.hub.Patch(ctx, comp, client.MergeFrom(read))
	})
}

// work reads the ManifestWork delivering an AppConfig of the test's namespace to a cluster.
func (f *fixture) work(ctx context.Context, cluster, app string) (*workv1.ManifestWork, error) {
	mw := &workv1.ManifestWork{}
	err := f.hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: f.ns + "." + app}, mw)
	return mw, err
}

// waitWork polls a ManifestWork until check passes on it, and returns it.
func (f *fixture) waitWork(cluster, app, what string, check func(*workv1.ManifestWork) bool) *workv1.ManifestWork {
	f.t.Helper()
	var last *workv1.ManifestWork
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		mw, err := f.work(ctx, cluster, app)
		if err != nil {
			return false, nil
		}
		last = mw
		return check(mw), nil
	})
	if err != nil {
		var status []byte
		if last != nil {
			status, _ = yaml.Marshal(last.Status)
		}
		f.t.Fatalf("ManifestWork of %s on %s: %s: %v; status:\n%s", app, cluster, what, err, status)
	}
	return last
}

// waitWorkGone polls until the AppConfig has no ManifestWork for the cluster.
func (f *fixture) waitWorkGone(cluster, app string) {
	f.t.Helper()
	f.eventually(fmt.Sprintf("ManifestWork of %s on %s deleted", app, cluster), func(ctx context.Context) (bool, error) {
		_, err := f.work(ctx, cluster, app)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// deployment reads a Deployment of the test's namespace from a spoke.
func (f *fixture) deployment(ctx context.Context, cluster, name string) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	err := f.spokes[cluster].Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, d)
	return d, err
}

// waitDeployment polls a Deployment on a spoke until check passes on it, and returns it.
func (f *fixture) waitDeployment(cluster, name, what string, check func(*appsv1.Deployment) bool) *appsv1.Deployment {
	f.t.Helper()
	var last *appsv1.Deployment
	var lastErr error
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		d, err := f.deployment(ctx, cluster, name)
		if err != nil {
			lastErr = err
			return false, nil
		}
		last, lastErr = d, nil
		return check(d), nil
	})
	if err != nil {
		got := "<none>"
		if last != nil {
			got = fmt.Sprintf("image %s, replicas %d, labels %v", image(last), ptr.Deref(last.Spec.Replicas, 0), last.Labels)
		}
		f.t.Fatalf("Deployment %s on %s: %s: %v; last seen: %s (error %v)", name, cluster, what, err, got, lastErr)
	}
	return last
}

// waitImage waits until a Deployment on a spoke runs image.
func (f *fixture) waitImage(cluster, name, want string) *appsv1.Deployment {
	f.t.Helper()
	return f.waitDeployment(cluster, name, "image "+want, func(d *appsv1.Deployment) bool { return image(d) == want })
}

// spokeObject reads an object of the test's namespace from a spoke.
func (f *fixture) spokeObject(ctx context.Context, cluster string, gvk schema.GroupVersionKind, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := f.spokes[cluster].Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, u)
	return u, err
}

// waitSpokeObject polls an object on a spoke until check passes on it, and returns it.
func (f *fixture) waitSpokeObject(cluster string, gvk schema.GroupVersionKind, name, what string, check func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	f.t.Helper()
	var last *unstructured.Unstructured
	f.eventually(fmt.Sprintf("%s %s on %s: %s", gvk.Kind, name, cluster, what), func(ctx context.Context) (bool, error) {
		u, err := f.spokeObject(ctx, cluster, gvk, name)
		if err != nil {
			return false, client.IgnoreNotFound(err)
		}
		last = u
		return check(u), nil
	})
	return last
}

// waitSpokeGone polls until the object is gone from the spoke.
func (f *fixture) waitSpokeGone(cluster string, gvk schema.GroupVersionKind, name string) {
	f.t.Helper()
	f.eventually(fmt.Sprintf("%s %s removed from %s", gvk.Kind, name, cluster), func(ctx context.Context) (bool, error) {
		_, err := f.spokeObject(ctx, cluster, gvk, name)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// labelCluster sets (value != "") or removes a label of a ManagedCluster. The ManagedClusters are
// shared by every test: the label is removed again when the test ends.
func (f *fixture) labelCluster(cluster, key, value string) {
	f.t.Helper()
	set := func(value string) func(*clusterv1.ManagedCluster) {
		return func(mc *clusterv1.ManagedCluster) {
			if value == "" {
				delete(mc.Labels, key)
				return
			}
			if mc.Labels == nil {
				mc.Labels = map[string]string{}
			}
			mc.Labels[key] = value
		}
	}
	f.editCluster(cluster, fmt.Sprintf("label %s=%q", key, value), false, set(value), set(""))
}

// editCluster changes a ManagedCluster (its status, with status) by edit, from the one stored, until
// the write is not refused; undo changes it back when the test ends.
func (f *fixture) editCluster(cluster, what string, status bool, edit, undo func(*clusterv1.ManagedCluster)) {
	f.t.Helper()
	write := func(change func(*clusterv1.ManagedCluster)) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			mc := &clusterv1.ManagedCluster{}
			if err := f.hub.Get(ctx, client.ObjectKey{Name: cluster}, mc); err != nil {
				return false, err
			}
			change(mc)
			if status {
				return true, f.hub.Status().Update(ctx, mc)
			}
			return true, f.hub.Update(ctx, mc)
		}
	}
	f.eventually(fmt.Sprintf("%s on %s", what, cluster), write(edit))
	f.t.Cleanup(func() { f.eventually(fmt.Sprintf("undo %s on %s", what, cluster), write(undo)) })
}

// Builders.

// webComponent is a Component of the test's namespace whose workload is a Deployment running image,
// with parameters image and replicas.
func (f *fixture) webComponent(name, image string) *v1alpha2.Component {
	return &v1alpha2.Component{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: v1alpha2.ComponentSpec{
			Workload: deploymentWorkload(name, image),
			Parameters: []v1alpha2.ComponentParameter{
				{Name: "image", FieldPaths: []string{"spec.template.spec.containers[0].image"}},
				{Name: "replicas", FieldPaths: []string{"spec.replicas"}},
			},
		},
	}
}

func deploymentWorkload(name, image string) runtime.RawExtension {
	return runtime.RawExtension{Raw: []byte(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":1,` +
		`"selector":{"matchLabels":{"app":"` + name + `"}},"template":{"metadata":{"labels":{"app":"` + name + `"}},` +
		`"spec":{"containers":[{"name":"main","image":"` + image + `"}]}}}}`)}
}

// appConfig is an AppConfig of the test's namespace.
func (f *fixture) appConfig(name string, placement *v1alpha2.Placement, components ...v1alpha2.ApplicationConfigurationComponent) *v1alpha2.ApplicationConfiguration {
	return &v1alpha2.ApplicationConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec:       v1alpha2.ApplicationConfigurationSpec{Placement: placement, Components: components},
	}
}

func onClusters(names ...string) *v1alpha2.Placement { return &v1alpha2.Placement{Clusters: names} }

func param(name, jsonValue string) v1alpha2.ComponentParameterValue {
	return v1alpha2.ComponentParameterValue{Name: name, Value: runtime.RawExtension{Raw: []byte(jsonValue)}}
}

// traitOf is a trait of kind gvk with spec (JSON).
func traitOf(gvk schema.GroupVersionKind, spec string) v1alpha2.ComponentTrait {
	return v1alpha2.ComponentTrait{Trait: runtime.RawExtension{Raw: []byte(
		`{"apiVersion":"` + gvk.GroupVersion().String() + `","kind":"` + gvk.Kind + `","spec":` + spec + `}`)}}
}

// Reading results.

func image(d *appsv1.Deployment) string {
	if len(d.Spec.Template.Spec.Containers) == 0 {
		return ""
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

func workloadRefName(u *unstructured.Unstructured) string {
	name, _, _ := unstructured.NestedString(u.Object, "spec", "workloadRef", "name")
	return name
}

// ready returns the AppConfig's Ready condition at its current generation, or nil.
func ready(app *v1alpha2.ApplicationConfiguration) *metav1.Condition {
	for i, c := range app.Status.Conditions {
		if c.Type == hub.ConditionReady && c.ObservedGeneration == app.Generation {
			return &app.Status.Conditions[i]
		}
	}
	return nil
}

func isReady(app *v1alpha2.ApplicationConfiguration) bool {
	c := ready(app)
	return c != nil && c.Status == metav1.ConditionTrue
}

// notReadyBecause reports whether the AppConfig's Ready condition at its generation is False with reason.
func notReadyBecause(reason string) func(*v1alpha2.ApplicationConfiguration) bool {
	return func(app *v1alpha2.ApplicationConfiguration) bool {
		c := ready(app)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason && c.Message != ""
	}
}

// workApplied reports whether the agent applied every manifest of the work at its generation and
// found each available.
func workApplied(mw *workv1.ManifestWork) bool {
	if !workCondition(mw, workv1.WorkApplied, metav1.ConditionTrue) || !workCondition(mw, workv1.WorkAvailable, metav1.ConditionTrue) {
		return false
	}
	if len(mw.Status.ResourceStatus.Manifests) != len(mw.Spec.Workload.Manifests) {
		return false
	}
	for _, m := range mw.Status.ResourceStatus.Manifests {
		for _, typ := range []string{workv1.ManifestApplied, workv1.ManifestAvailable} {
			c := findCondition(m.Conditions, typ)
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != mw.Generation {
				return false
			}
		}
	}
	return true
}

func workCondition(mw *workv1.ManifestWork, typ string, status metav1.ConditionStatus) bool {
	c := findCondition(mw.Status.Conditions, typ)
	return c != nil && c.Status == status && c.ObservedGeneration == mw.Generation
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// clusterStatus returns the AppConfig's status of a cluster, or nil.
func clusterStatus(app *v1alpha2.ApplicationConfiguration, cluster string) *v1alpha2.ClusterStatus {
	for i := range app.Status.Clusters {
		if app.Status.Clusters[i].Name == cluster {
			return &app.Status.Clusters[i]
		}
	}
	return nil
}

// manifestStatus returns the AppConfig's status of one object on a cluster, or nil.
func manifestStatus(app *v1alpha2.ApplicationConfiguration, cluster, kind, name string) *v1alpha2.ManifestStatus {
	cs := clusterStatus(app, cluster)
	if cs == nil {
		return nil
	}
	for i := range cs.Manifests {
		if cs.Manifests[i].Kind == kind && cs.Manifests[i].Name == name {
			return &cs.Manifests[i]
		}
	}
	return nil
}

// deliveredTo reports whether the AppConfig is Ready, its summary counts exactly len(names) clusters
// applied and available, and its ManifestWorks, read as `kubectl ferry status appconfig` reads them,
// are those of these clusters (sorted) and report every manifest Applied and Available. The AppConfig's
// own status lists a cluster only while it is not fine (here: not healthy yet).
func deliveredTo(app *v1alpha2.ApplicationConfiguration, works []workv1.ManifestWork, names ...string) bool {
	s := app.Status.Summary
	n := fmt.Sprintf("%d/%d", len(names), len(names))
	if !isReady(app) || s == nil || int(s.Clusters) != len(names) || s.Applied != n || s.Available != n {
		return false
	}
	view := statusview.ForAppConfig(app, works)
	if len(view.Clusters) != len(names) {
		return false
	}
	healthy := map[string]bool{}
	for i, w := range view.Clusters {
		if w.Cluster != names[i] || w.Applied != metav1.ConditionTrue || w.Available != metav1.ConditionTrue || len(w.Manifests) == 0 {
			return false
		}
		for _, m := range w.Manifests {
			if m.Applied != metav1.ConditionTrue || m.Available != metav1.ConditionTrue {
				return false
			}
		}
		healthy[w.Cluster] = w.Health == v1alpha2.Healthy
	}
	for _, cs := range app.Status.Clusters {
		if healthy[cs.Name] {
			return false // listed though fine: the hub has not caught up yet
		}
	}
	return true
}

// waitDelivered waits until deliveredTo holds for the AppConfig and these clusters.
func (f *fixture) waitDelivered(name string, names ...string) *v1alpha2.ApplicationConfiguration {
	f.t.Helper()
	var app *v1alpha2.ApplicationConfiguration
	f.eventually(fmt.Sprintf("AppConfig %s delivered to %v", name, names), func(ctx context.Context) (bool, error) {
		a, err := f.app(ctx, name)
		if err != nil {
			return false, err
		}
		works, err := f.works(ctx, name)
		if err != nil {
			return false, err
		}
		if !deliveredTo(a, works, names...) {
			status, _ := yaml.Marshal(a.Status)
			return false, fmt.Errorf("not yet; %d works; status:\n%s", len(works), status)
		}
		app = a
		return true, nil
	})
	return app
}
