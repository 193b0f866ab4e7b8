package hub_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
	"github.com/ferry-mc/ferry/pkg/render"
)

// unbind removes the test namespace's binding of the global set that setup made: its AppConfigs may
// reach no cluster until a set is bound.
func (f *fixture) unbind(set string) {
	f.t.Helper()
	b := &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: set, Namespace: f.ns}}
	if err := f.hub.Delete(context.Background(), b); client.IgnoreNotFound(err) != nil {
		f.t.Fatalf("delete ManagedClusterSetBinding %s/%s: %v", f.ns, set, err)
	}
}

// clusterSet creates a ManagedClusterSet of the given selector (nil: ExclusiveClusterSetLabel), deleted
// when the test ends.
func (f *fixture) clusterSet(name string, selector *metav1.LabelSelector) {
	f.t.Helper()
	set := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if selector != nil {
		set.Spec.ClusterSelector = clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector, LabelSelector: selector}
	}
	f.mustCreate(f.hub, set)
	f.t.Cleanup(func() {
		if err := f.hub.Delete(context.Background(), set); client.IgnoreNotFound(err) != nil {
			f.t.Errorf("delete ManagedClusterSet %s: %v", name, err)
		}
	})
}

// bind binds a set to the test's namespace.
func (f *fixture) bind(set string) {
	f.t.Helper()
	f.mustCreate(f.hub, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: set, Namespace: f.ns},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set}})
}

// placedAs reports whether the AppConfig's status says it is delivered to clusters and refused on
// refused, with its ClustersBound condition saying so for its current generation.
func placedAs(app *v1alpha2.ApplicationConfiguration, clusters, refused []string, reason string) bool {
	p := app.Status.Placement
	bound := findCondition(app.Status.Conditions, v1alpha2.ConditionClustersBound)
	return p != nil && slices.Equal(p.Clusters, clusters) && slices.Equal(p.Refused, refused) && int(p.RefusedClusters) == len(refused) &&
		bound != nil && bound.Reason == reason && bound.ObservedGeneration == app.Generation
}

// workClusters are the clusters holding a ManifestWork of the AppConfig, sorted.
func (f *fixture) workClusters(ctx context.Context, app string) ([]string, map[string]workv1.ManifestWork, error) {
	works, err := f.works(ctx, app)
	if err != nil {
		return nil, nil, err
	}
	var names []string
	byCluster := map[string]workv1.ManifestWork{}
	for _, w := range works {
		if w.DeletionTimestamp == nil {
			names = append(names, w.Namespace)
			byCluster[w.Namespace] = w
		}
	}
	slices.Sort(names)
	return names, byCluster, nil
}

// An AppConfig reaches only the clusters of the ManagedClusterSets bound to its namespace, whatever its
// placement names: a binding added brings a cluster in, a binding deleted withdraws the application
// from the clusters it alone allowed (and only those), a cluster relabelled out of its set is left, and
// an AppConfig whose placement reaches no bound cluster says so. Both of OCM's selector types hold.
func TestAppConfigReachesOnlyTheClustersBoundToItsNamespace(t *testing.T) {
	f := setup(t)
	f.unbind(localcluster.GlobalClusterSet)
	f.startHub(hubOptions(render.ApplyOnceOff))
	// A set of LabelSelector type holding cluster1 by a label of this test's, bound here.
	key, labelled, exclusive := "ferry.io/test-"+f.ns, "labelled-"+f.ns, "exclusive-"+f.ns
	f.labelCluster("cluster1", key, "a")
	f.clusterSet(labelled, &metav1.LabelSelector{MatchLabels: map[string]string{key: "a"}})
	f.bind(labelled)
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	// The placement names every cluster of the hub.
	f.createApp(f.appConfig("grab", &v1alpha2.Placement{ClusterSelector: &metav1.LabelSelector{}},
		v1alpha2.ApplicationConfigurationComponent{ComponentName: "web"}))

	only := func(what string, want ...string) map[string]workv1.ManifestWork {
		var works map[string]workv1.ManifestWork
		f.eventually(what, func(ctx context.Context) (bool, error) {
			names, byCluster, err := f.workClusters(ctx, "grab")
			works = byCluster
			if err == nil && !slices.Equal(names, want) {
				err = fmt.Errorf("works on %v", names)
			}
			return err == nil, err
		})
		return works
	}
	first := only("a work on cluster1 only", "cluster1")
	app := f.waitApp("grab", "delivered to cluster1, cluster2 refused", func(app *v1alpha2.ApplicationConfiguration) bool {
		return isReady(app) && placedAs(app, []string{"cluster1"}, []string{"cluster2"}, v1alpha2.ReasonClustersNotBound)
	})
	for _, says := range []string{"cluster2", "namespace " + f.ns, "ManagedClusterSetBinding", "managedclustersets/bind"} {
		if msg := findCondition(app.Status.Conditions, v1alpha2.ConditionClustersBound).Message; !strings.Contains(msg, says) {
			t.Errorf("ClustersBound's message %q does not say %q", msg, says)
		}
	}
	f.eventually("a Warning event ClustersNotBound on the AppConfig", func(ctx context.Context) (bool, error) {
		events := &eventsv1.EventList{}
		if err := f.hub.List(ctx, events, client.InNamespace(f.ns)); err != nil {
			return false, err
		}
		return slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
			return e.Regarding.Name == "grab" && e.Type == "Warning" && e.Reason == v1alpha2.ReasonClustersNotBound && strings.Contains(e.Note, "cluster2")
		}), nil
	})
	f.consistently("no work on cluster2", time.Second, func(ctx context.Context) (bool, error) {
		names, _, err := f.workClusters(ctx, "grab")
		return slices.Equal(names, []string{"cluster1"}), err
	})

	// A set of OCM's exclusive label, holding cluster2, is bound too: cluster2 gets its work.
	f.clusterSet(exclusive, nil)
	f.labelCluster("cluster2", clusterv1beta2.ClusterSetLabel, exclusive)
	f.bind(exclusive)
	only("works on both clusters once cluster2's set is bound", "cluster1", "cluster2")
	f.waitApp("grab", "every cluster bound", func(app *v1alpha2.ApplicationConfiguration) bool {
		return isReady(app) && placedAs(app, clusters, nil, v1alpha2.ReasonAllClustersBound)
	})

	// Its binding deleted, cluster2 loses the application; cluster1 keeps the very work it had.
	f.unbind(exclusive)
	after := only("cluster2's work withdrawn with its binding", "cluster1")
	if w := after["cluster1"]; w.UID != first["cluster1"].UID || w.Generation != first["cluster1"].Generation {
		t.Errorf("cluster1's work changed when cluster2's binding went: uid %s gen %d, was %s gen %d",
			w.UID, w.Generation, first["cluster1"].UID, first["cluster1"].Generation)
	}
	f.waitApp("grab", "cluster2 refused again", func(app *v1alpha2.ApplicationConfiguration) bool {
		return placedAs(app, []string{"cluster1"}, []string{"cluster2"}, v1alpha2.ReasonClustersNotBound)
	})

	// cluster1 relabelled out of its set: the placement reaches no bound cluster, and Ready says so.
	f.labelCluster("cluster1", key, "b")
	only("no work left")
	f.waitApp("grab", "Ready False, ClustersNotBound", func(app *v1alpha2.ApplicationConfiguration) bool {
		return notReadyBecause(v1alpha2.ReasonClustersNotBound)(app) && placedAs(app, nil, clusters, v1alpha2.ReasonClustersNotBound)
	})
}

// Whoever may write a PlacementDecision in a namespace cannot widen what its AppConfigs reach: decisions
// naming a cluster no bound set holds deliver nothing there.
func TestPlacementDecisionsDoNotWidenTheBindings(t *testing.T) {
	f := setup(t)
	f.unbind(localcluster.GlobalClusterSet)
	f.startHub(hubOptions(render.ApplyOnceOff))
	key, set := "ferry.io/test-"+f.ns, "decided-"+f.ns
	f.labelCluster("cluster1", key, "a")
	f.clusterSet(set, &metav1.LabelSelector{MatchLabels: map[string]string{key: "a"}})
	f.bind(set)
	f.setDecisions("everywhere", "everywhere-1", "cluster1", "cluster2")
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	f.createApp(f.appConfig("decided", &v1alpha2.Placement{PlacementRef: &v1alpha2.PlacementRef{Name: "everywhere"}},
		v1alpha2.ApplicationConfigurationComponent{ComponentName: "web"}))
	f.waitApp("decided", "cluster1 delivered, cluster2 refused", func(app *v1alpha2.ApplicationConfiguration) bool {
		return isReady(app) && placedAs(app, []string{"cluster1"}, []string{"cluster2"}, v1alpha2.ReasonClustersNotBound)
	})
	f.consistently("a work on cluster1 and none on cluster2", time.Second, func(ctx context.Context) (bool, error) {
		names, _, err := f.workClusters(ctx, "decided")
		return slices.Equal(names, []string{"cluster1"}), err
	})
}

// With --cluster-set-bindings=audit (the step of an upgrade), nothing is held back or withdrawn: every
// cluster the placement names gets its work, and those enforce would refuse are reported.
func TestAuditedBindingsReportAndWithdrawNothing(t *testing.T) {
	f := setup(t)
	f.unbind(localcluster.GlobalClusterSet)
	o := hubOptions(render.ApplyOnceOff)
	o.ClusterSetBindings = hub.ClusterSetBindingsAudit
	f.startHub(o)
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	f.createApp(f.appConfig("legacy", onClusters(clusters...), v1alpha2.ApplicationConfigurationComponent{ComponentName: "web"}))
	f.waitDelivered("legacy", clusters...)
	app := f.waitApp("legacy", "both reported, as audited", func(app *v1alpha2.ApplicationConfiguration) bool {
		return placedAs(app, clusters, clusters, v1alpha2.ReasonClustersNotBoundAudit) &&
			app.Status.Placement.ClusterSetBindings == v1alpha2.ClusterSetBindingsAudit
	})
	if msg := findCondition(app.Status.Conditions, v1alpha2.ConditionClustersBound).Message; !strings.Contains(msg, "audit") {
		t.Errorf("ClustersBound's message %q does not say the bindings are only audited", msg)
	}
	f.consistently("both works stay", time.Second, func(ctx context.Context) (bool, error) {
		names, _, err := f.workClusters(ctx, "legacy")
		return slices.Equal(names, clusters), err
	})
}
