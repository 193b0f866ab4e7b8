package hub_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/internal/statusview"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
	"github.com/ferry-mc/ferry/pkg/render"
)

// waitLatest polls until the component's status names latest, and returns its revisions' names.
func (f *fixture) waitLatest(component, latest string) []string {
	f.t.Helper()
	var names []string
	f.eventually("latest revision "+latest+" of "+component, func(ctx context.Context) (bool, error) {
		comp := &v1alpha2.Component{}
		if err := f.hub.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: component}, comp); err != nil {
			return false, err
		}
		var err error
		if names, err = f.revisions(ctx, component); err != nil {
			return false, err
		}
		s := comp.Status.LatestRevision
		return s != nil && s.Name == latest && comp.Status.ObservedGeneration == comp.Generation && slices.Contains(names, latest), nil
	})
	return names
}

// revisions lists the names of a component's revisions, sorted.
func (f *fixture) revisions(ctx context.Context, component string) ([]string, error) {
	revs := &appsv1.ControllerRevisionList{}
	if err := f.hub.List(ctx, revs, client.InNamespace(f.ns), client.MatchingLabels{hub.ComponentLabel: component}); err != nil {
		return nil, err
	}
	var names []string
	for _, r := range revs.Items {
		names = append(names, r.Name)
	}
	slices.Sort(names)
	return names, nil
}

// setImage changes the image of a component made by webComponent.
func (f *fixture) setImage(component, image string) {
	f.t.Helper()
	f.updateComponent(component, func(comp *v1alpha2.Component) { comp.Spec.Workload = deploymentWorkload(component, image) })
}

// Component revisions: each change of a Component's spec is a new revision <component>-vN; a change that leaves
// the spec alone makes none.
func TestEveryComponentSpecChangeIsANewRevision(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	comp := f.webComponent("web", "nginx:1")
	f.mustCreate(f.hub, comp)
	if got := f.waitLatest("web", "web-v1"); !slices.Equal(got, []string{"web-v1"}) {
		t.Fatalf("revisions = %v, want [web-v1]", got)
	}
	rev := &appsv1.ControllerRevision{}
	if err := f.hub.Get(t.Context(), client.ObjectKey{Namespace: f.ns, Name: "web-v1"}, rev); err != nil {
		t.Fatal(err)
	}
	if err := f.hub.Get(t.Context(), client.ObjectKeyFromObject(comp), comp); err != nil {
		t.Fatal(err)
	}
	if rev.Revision != 1 || !isControlledBy(rev, comp.UID) {
		t.Errorf("web-v1: revision %d, owners %v; want 1, controlled by the component", rev.Revision, rev.OwnerReferences)
	}

	f.updateComponent("web", func(comp *v1alpha2.Component) { comp.Labels = map[string]string{"team": "web"} })
	f.setImage("web", "nginx:2")
	if got := f.waitLatest("web", "web-v2"); !slices.Equal(got, []string{"web-v1", "web-v2"}) {
		t.Fatalf("revisions = %v, want [web-v1 web-v2] (a label change makes none)", got)
	}
}

// Old revisions beyond the limit go, except the latest and those an AppConfig pins.
func TestOldRevisionsArePrunedUnlessPinned(t *testing.T) {
	f := setup(t)
	f.startHub(hub.Options{ApplyOnceOnly: render.ApplyOnceOff, RevisionsKept: 1})
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	f.waitLatest("web", "web-v1")
	f.createApp(f.appConfig("pinned", nil, v1alpha2.ApplicationConfigurationComponent{RevisionName: "web-v1"}))
	for i, image := range []string{"nginx:2", "nginx:3", "nginx:4"} {
		f.setImage("web", image)
		f.waitLatest("web", hub.RevisionName("web", int64(i+2)))
	}
	// Kept: the latest (v4), one more (v3), and v1, pinned.
	var got []string
	f.eventually("revisions pruned to [web-v1 web-v3 web-v4]", func(ctx context.Context) (bool, error) {
		var err error
		got, err = f.revisions(ctx, "web")
		return slices.Equal(got, []string{"web-v1", "web-v3", "web-v4"}), err
	})
}

func isControlledBy(rev *appsv1.ControllerRevision, uid types.UID) bool {
	ref := metav1.GetControllerOf(rev)
	return ref != nil && ref.UID == uid
}

// Component revisions, on the spokes: editing a Component makes <comp>-v2. An AppConfig that names the component
// moves to it (its workload gets the new spec on both spokes); one pinned to <comp>-v1 stays there;
// with a revision-enabled trait, the v1 and v2 workloads both run and the trait points at v2.
func TestComponentRevisionsReachTheSpokes(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"), f.webComponent("canary", "nginx:1"))
	f.waitLatest("web", "web-v1")
	f.waitLatest("canary", "canary-v1")
	both := onClusters(clusters...)
	f.createApp(f.appConfig("follow", both, v1alpha2.ApplicationConfigurationComponent{ComponentName: "web"}))
	f.createApp(f.appConfig("pinned", both, v1alpha2.ApplicationConfigurationComponent{RevisionName: "web-v1"}))
	f.createApp(f.appConfig("rollout", both, v1alpha2.ApplicationConfigurationComponent{ComponentName: "canary",
		Traits: []v1alpha2.ComponentTrait{traitOf(rolloutTraitGVK, `{"batch":1}`)}}))
	for _, app := range []string{"follow", "pinned", "rollout"} {
		f.waitDelivered(app, clusters...)
	}
	traitUIDs := map[string]types.UID{}
	for _, c := range clusters {
		f.waitImage(c, "web", "nginx:1")
		f.waitImage(c, "web-v1", "nginx:1")
		f.waitImage(c, "canary-v1", "nginx:1")
		traitUIDs[c] = f.waitSpokeObject(c, rolloutTraitGVK, "canary-rollouttrait", "points at canary-v1",
			func(u *unstructured.Unstructured) bool { return workloadRefName(u) == "canary-v1" }).GetUID()
	}

	f.setImage("web", "nginx:2")
	f.setImage("canary", "nginx:2")
	if got := f.waitLatest("web", "web-v2"); !slices.Equal(got, []string{"web-v1", "web-v2"}) {
		t.Errorf("revisions of web = %v, want [web-v1 web-v2]", got)
	}
	f.waitLatest("canary", "canary-v2")

	for _, c := range clusters {
		// Following the component: the one workload gets v2's spec.
		d := f.waitImage(c, "web", "nginx:2")
		if d.Labels[hub.LabelRevision] != "web-v2" {
			t.Errorf("%s: workload web has revision label %q, want web-v2", c, d.Labels[hub.LabelRevision])
		}
		// Revision-enabled: a workload per revision, and the trait points at the newest.
		f.waitImage(c, "canary-v2", "nginx:2")
		f.eventually("one RolloutTrait of canary on "+c+", pointing at canary-v2", func(ctx context.Context) (bool, error) {
			traits := &unstructured.UnstructuredList{}
			traits.SetGroupVersionKind(rolloutTraitGVK.GroupVersion().WithKind(rolloutTraitGVK.Kind + "List"))
			if err := f.spokes[c].List(ctx, traits, client.InNamespace(f.ns), client.MatchingLabels{hub.LabelComponent: "canary"}); err != nil {
				return false, err
			}
			return len(traits.Items) == 1 && workloadRefName(&traits.Items[0]) == "canary-v2", nil
		})
		// The trait is updated, not replaced: whatever state it keeps survives the new revision.
		if tr, err := f.spokeObject(t.Context(), c, rolloutTraitGVK, "canary-rollouttrait"); err != nil || tr.GetUID() != traitUIDs[c] {
			t.Errorf("%s: RolloutTrait canary-rollouttrait re-created (%v): want the same object, its workloadRef updated", c, err)
		}
	}
	// The earlier revision's workload stays beside it, with v1's spec, and so does the pinned one.
	f.consistently("web-v1 and canary-v1 stay on v1 on both spokes", time.Second, func(ctx context.Context) (bool, error) {
		for _, c := range clusters {
			for _, name := range []string{"web-v1", "canary-v1"} {
				d, err := f.deployment(ctx, c, name)
				if err != nil || image(d) != "nginx:1" || d.DeletionTimestamp != nil {
					return false, fmt.Errorf("%s on %s: image %s, deleting %v, error %v", name, c, image(d), d.DeletionTimestamp != nil, err)
				}
			}
		}
		return true, nil
	})
	for _, c := range clusters {
		if _, err := f.deployment(t.Context(), c, "web-v2"); !apierrors.IsNotFound(err) {
			t.Errorf("%s: a web-v2 workload exists (%v): only revision-enabled traits make one per revision", c, err)
		}
	}
	app := f.waitApp("follow", "status names web-v2", func(app *v1alpha2.ApplicationConfiguration) bool {
		return isReady(app) && len(app.Status.Workloads) == 1 && app.Status.Workloads[0].ComponentRevisionName == "web-v2"
	})
	if ref := app.Status.Workloads[0].Reference; ref.Name != "web" || ref.Kind != "Deployment" {
		t.Errorf("follow's workload = %+v, want the Deployment web", ref)
	}
	f.waitApp("pinned", "status still names web-v1", func(app *v1alpha2.ApplicationConfiguration) bool {
		return isReady(app) && len(app.Status.Workloads) == 1 && app.Status.Workloads[0].ComponentRevisionName == "web-v1"
	})

	// The rollout retires canary-v1 on cluster1 (the rollout trait collects earlier workloads): the
	// agent leaves it deleted, and the application stays available there.
	f.deleteOnSpoke("cluster1", &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "canary-v1", "namespace": f.ns}}})
	f.eventually("canary-v1 reported gone on cluster1, the application still available", func(ctx context.Context) (bool, error) {
		app, err := f.app(ctx, "rollout")
		if err != nil {
			return false, err
		}
		works, err := f.works(ctx, "rollout")
		if err != nil {
			return false, err
		}
		gone := false
		for _, w := range statusview.ForAppConfig(app, works).Clusters {
			for _, m := range w.Manifests {
				if w.Cluster == "cluster1" && m.Kind == "Deployment" && m.Name == "canary-v1" {
					gone = m.EarlierRevision && m.Available == metav1.ConditionFalse
				}
			}
		}
		// An earlier revision's workload does not count: the status lists no cluster for it.
		return gone && app.Status.Summary != nil && app.Status.Summary.Available == "2/2" && manifestStatus(app, "cluster1", "Deployment", "canary-v1") == nil, nil
	})
	f.consistently("canary-v1 stays deleted on cluster1", 2*time.Second, func(ctx context.Context) (bool, error) {
		_, err := f.deployment(ctx, "cluster1", "canary-v1")
		return apierrors.IsNotFound(err), nil
	})
	f.waitImage("cluster2", "canary-v1", "nginx:1")
}
