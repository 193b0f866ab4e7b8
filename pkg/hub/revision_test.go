package hub_test

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ferry-mc/ferry/internal/localcluster"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
)

// startManager runs, against a fresh hub, a manager with the controllers register sets up, and returns
// a client of that hub.
func startManager(t *testing.T, register func(ctrl.Manager, *runtime.Scheme) error) client.Client {
	t.Helper()
	env := localcluster.StartForTest(t, localcluster.Options{})
	scheme, err := hub.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(env.Hub.Config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Each test runs the same controllers in a manager of its own.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := register(mgr, scheme); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	c, err := client.New(env.Hub.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startRevisions runs the revision reconciler against a fresh hub and returns a client of that hub.
func startRevisions(t *testing.T, kept int) client.Client {
	return startManager(t, func(mgr ctrl.Manager, scheme *runtime.Scheme) error {
		return (&hub.RevisionReconciler{Client: mgr.GetClient(), Scheme: scheme, RevisionsKept: kept}).SetupWithManager(mgr)
	})
}

func component(image string) *v1alpha2.Component {
	return &v1alpha2.Component{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: v1alpha2.ComponentSpec{Workload: runtime.RawExtension{Raw: []byte(
			`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"containers":[{"name":"web","image":"` + image + `"}]}}}}`)}},
	}
}

// waitLatest polls until the component's status names latest, and returns its revisions' names.
func waitLatest(t *testing.T, c client.Client, latest string) []string {
	t.Helper()
	var names []string
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		comp := &v1alpha2.Component{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, comp); err != nil {
			return false, err
		}
		revs := &appsv1.ControllerRevisionList{}
		if err := c.List(ctx, revs, client.InNamespace("default"), client.MatchingLabels{hub.ComponentLabel: "web"}); err != nil {
			return false, err
		}
		names = names[:0]
		for _, r := range revs.Items {
			names = append(names, r.Name)
		}
		slices.Sort(names)
		s := comp.Status.LatestRevision
		return s != nil && s.Name == latest && comp.Status.ObservedGeneration == comp.Generation && slices.Contains(names, latest), nil
	})
	if err != nil {
		t.Fatalf("latest revision %s: %v (revisions %v)", latest, err, names)
	}
	return names
}

func update(t *testing.T, c client.Client, fn func(*v1alpha2.Component)) {
	t.Helper()
	comp := &v1alpha2.Component{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "web"}, comp); err != nil {
		t.Fatal(err)
	}
	fn(comp)
	if err := c.Update(t.Context(), comp); err != nil {
		t.Fatal(err)
	}
}

// Seed 003: each change of a Component's spec is a new revision <component>-vN; a change that leaves
// the spec alone makes none.
func TestEveryComponentSpecChangeIsANewRevision(t *testing.T) {
	c := startRevisions(t, 10)
	if err := c.Create(t.Context(), component("nginx:1")); err != nil {
		t.Fatal(err)
	}
	if got := waitLatest(t, c, "web-v1"); !slices.Equal(got, []string{"web-v1"}) {
		t.Fatalf("revisions = %v, want [web-v1]", got)
	}
	rev := &appsv1.ControllerRevision{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "web-v1"}, rev); err != nil {
		t.Fatal(err)
	}
	if rev.Revision != 1 || !isControlledBy(rev, ownerUID(t, c).UID) {
		t.Errorf("web-v1: revision %d, owners %v; want 1, controlled by the component", rev.Revision, rev.OwnerReferences)
	}

	update(t, c, func(comp *v1alpha2.Component) { comp.Labels = map[string]string{"team": "web"} })
	update(t, c, func(comp *v1alpha2.Component) { comp.Spec = component("nginx:2").Spec })
	if got := waitLatest(t, c, "web-v2"); !slices.Equal(got, []string{"web-v1", "web-v2"}) {
		t.Fatalf("revisions = %v, want [web-v1 web-v2] (a label change makes none)", got)
	}
}

// Old revisions beyond the limit go, except the latest and those an AppConfig pins.
func TestOldRevisionsArePrunedUnlessPinned(t *testing.T) {
	c := startRevisions(t, 1)
	if err := c.Create(t.Context(), component("nginx:1")); err != nil {
		t.Fatal(err)
	}
	waitLatest(t, c, "web-v1")
	app := &v1alpha2.ApplicationConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "pinned", Namespace: "default"},
		Spec:       v1alpha2.ApplicationConfigurationSpec{Components: []v1alpha2.ApplicationConfigurationComponent{{RevisionName: "web-v1"}}},
	}
	if err := c.Create(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	for i, image := range []string{"nginx:2", "nginx:3", "nginx:4"} {
		update(t, c, func(comp *v1alpha2.Component) { comp.Spec = component(image).Spec })
		waitLatest(t, c, hub.RevisionName("web", int64(i+2)))
	}
	// Kept: the latest (v4), one more (v3), and v1, pinned.
	if got := waitLatest(t, c, "web-v4"); !slices.Equal(got, []string{"web-v1", "web-v3", "web-v4"}) {
		t.Errorf("revisions = %v, want [web-v1 web-v3 web-v4]", got)
	}
}

func ownerUID(t *testing.T, c client.Client) metav1.ObjectMeta {
	t.Helper()
	comp := &v1alpha2.Component{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "web"}, comp); err != nil {
		t.Fatal(err)
	}
	return comp.ObjectMeta
}

func isControlledBy(rev *appsv1.ControllerRevision, uid types.UID) bool {
	ref := metav1.GetControllerOf(rev)
	return ref != nil && ref.UID == uid
}
