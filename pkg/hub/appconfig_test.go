package hub_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
)

// startHub runs the hub controllers against a fresh hub and returns a client of it.
func startHub(t *testing.T) client.Client {
	return startManager(t, func(mgr ctrl.Manager, scheme *runtime.Scheme) error {
		if err := (&hub.RevisionReconciler{Client: mgr.GetClient(), Scheme: scheme}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&hub.AppConfigReconciler{Client: mgr.GetClient(), Mapper: mgr.GetRESTMapper(), ApplyOnceOnly: hub.ApplyOnceOff}).SetupWithManager(mgr)
	})
}

func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func mustCreate(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

func TestAppConfigIsDeliveredToItsClustersAndFollowsThem(t *testing.T) {
	c := startHub(t)
	for _, name := range []string{"cluster1", "cluster2"} {
		mustCreate(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
			&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"env": "prod"}}})
	}
	comp := component("nginx:1")
	comp.Spec.Parameters = []v1alpha2.ComponentParameter{{Name: "image", FieldPaths: []string{"spec.template.spec.containers[0].image"}, Required: true}}
	mustCreate(t, c, comp, &v1alpha2.TraitDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "manualscalertraits.core.oam.dev"},
		Spec:       v1alpha2.TraitDefinitionSpec{Reference: v1alpha2.DefinitionReference{Name: "manualscalertraits.core.oam.dev"}, WorkloadRefPath: "spec.workloadRef"},
	})
	app := &v1alpha2.ApplicationConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default"},
		Spec: v1alpha2.ApplicationConfigurationSpec{
			Placement: &v1alpha2.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
			Components: []v1alpha2.ApplicationConfigurationComponent{{
				ComponentName:   "web",
				ParameterValues: []v1alpha2.ComponentParameterValue{{Name: "image", Value: runtime.RawExtension{Raw: []byte(`"nginx:2"`)}}},
				Traits: []v1alpha2.ComponentTrait{{Trait: runtime.RawExtension{Raw: []byte(
					`{"apiVersion":"core.oam.dev/v1alpha2","kind":"ManualScalerTrait","spec":{"replicaCount":2}}`)}}},
			}},
		},
	}
	mustCreate(t, c, app)

	work := func(cluster string) (*workv1.ManifestWork, error) {
		mw := &workv1.ManifestWork{}
		err := c.Get(t.Context(), client.ObjectKey{Namespace: cluster, Name: "default.shop"}, mw)
		return mw, err
	}
	eventually(t, "a ManifestWork in each cluster", func(context.Context) (bool, error) {
		for _, cl := range []string{"cluster1", "cluster2"} {
			mw, err := work(cl)
			if err != nil || len(mw.Spec.Workload.Manifests) != 2 {
				return false, nil
			}
		}
		return true, nil
	})

	// An agent reports on cluster1: the AppConfig sees it.
	mw, _ := work("cluster1")
	for _, typ := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
		meta.SetStatusCondition(&mw.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "Test", ObservedGeneration: mw.Generation})
	}
	if err := c.Status().Update(t.Context(), mw); err != nil {
		t.Fatal(err)
	}
	eventually(t, "status folded back", func(ctx context.Context) (bool, error) {
		got := &v1alpha2.ApplicationConfiguration{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(app), got); err != nil {
			return false, err
		}
		s := got.Status
		return s.Summary != nil && s.Summary.Applied == "1/2" && len(s.Workloads) == 1 &&
			s.Workloads[0].ComponentRevisionName == "web-v1" && meta.IsStatusConditionTrue(s.Conditions, hub.ConditionReady), nil
	})

	// cluster2 leaves the placement: its ManifestWork goes.
	mc := &clusterv1.ManagedCluster{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: "cluster2"}, mc); err != nil {
		t.Fatal(err)
	}
	mc.Labels["env"] = "dev"
	if err := c.Update(t.Context(), mc); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cluster2's ManifestWork deleted", func(context.Context) (bool, error) {
		_, err := work("cluster2")
		return apierrors.IsNotFound(err), nil
	})

	// Deleting the AppConfig deletes its ManifestWorks, then the AppConfig goes.
	if err := c.Delete(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	eventually(t, "AppConfig and its ManifestWorks gone", func(ctx context.Context) (bool, error) {
		_, err1 := work("cluster1")
		err2 := c.Get(ctx, client.ObjectKeyFromObject(app), &v1alpha2.ApplicationConfiguration{})
		return apierrors.IsNotFound(err1) && apierrors.IsNotFound(err2), nil
	})
}

// Bad input: a clear condition on the AppConfig, and nothing delivered.
func TestAppConfigThatCannotBeRenderedDeliversNothing(t *testing.T) {
	c := startHub(t)
	mustCreate(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}})
	comp := component("nginx:1")
	mustCreate(t, c, comp)
	for name, entry := range map[string]v1alpha2.ApplicationConfigurationComponent{
		"missing-component": {ComponentName: "nope"},
		"unknown-parameter": {ComponentName: "web", ParameterValues: []v1alpha2.ComponentParameterValue{{Name: "colour", Value: runtime.RawExtension{Raw: []byte(`"red"`)}}}},
		"missing-trait-definition": {ComponentName: "web", Traits: []v1alpha2.ComponentTrait{{Trait: runtime.RawExtension{Raw: []byte(
			`{"apiVersion":"example.com/v1","kind":"Mystery","spec":{}}`)}}}},
	} {
		mustCreate(t, c, &v1alpha2.ApplicationConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: v1alpha2.ApplicationConfigurationSpec{Placement: &v1alpha2.Placement{Clusters: []string{"cluster1"}},
				Components: []v1alpha2.ApplicationConfigurationComponent{entry}},
		})
	}
	want := map[string]string{"missing-component": "ComponentNotFound", "unknown-parameter": "UnknownParameter", "missing-trait-definition": "TraitDefinitionNotFound"}
	for name, reason := range want {
		eventually(t, name+" reports "+reason, func(ctx context.Context) (bool, error) {
			got := &v1alpha2.ApplicationConfiguration{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, got); err != nil {
				return false, err
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, hub.ConditionReady)
			return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == reason && cond.Message != "", nil
		})
	}
	works := &workv1.ManifestWorkList{}
	if err := c.List(t.Context(), works, client.InNamespace("cluster1")); err != nil {
		t.Fatal(err)
	}
	if len(works.Items) != 0 {
		t.Errorf("%d ManifestWorks delivered for AppConfigs that cannot be rendered", len(works.Items))
	}
}
