package render

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

func renderedShop(t *testing.T, entry v1alpha2.ApplicationConfigurationComponent) (*v1alpha2.ApplicationConfiguration, []Component) {
	t.Helper()
	return renderedShopAt(t, 0, entry)
}

// renderedShopAt is renderedShop with the AppConfig at generation (0: as renderInput has it).
func renderedShopAt(t *testing.T, generation int64, entry v1alpha2.ApplicationConfigurationComponent) (*v1alpha2.ApplicationConfiguration, []Component) {
	t.Helper()
	in := renderInput(entry)
	if generation != 0 {
		in.App.Generation = generation
	}
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	return in.App, out
}

// Apply-once-only: --apply-once-only maps workloads and traits to Update, ApplyOnce or ApplyOnceForce; a
// strategy set on the AppConfig wins.
func TestManifestWorkStrategiesFollowApplyOnceOnlyAndOverrides(t *testing.T) {
	entry := v1alpha2.ApplicationConfigurationComponent{
		ComponentName:   "web",
		ParameterValues: []v1alpha2.ComponentParameterValue{{Name: "image", Value: raw(`"nginx:2"`)}},
		Traits:          []v1alpha2.ComponentTrait{trait("ManualScalerTrait", `{"replicaCount":3}`)},
	}
	for mode, want := range map[ApplyOnceOnly]workv1.UpdateStrategyType{
		ApplyOnceOff: "Update", ApplyOnceOn: "ApplyOnce", ApplyOnceForce: "ApplyOnceForce", "": "Update",
	} {
		app, rendered := renderedShop(t, entry)
		mw, err := BuildManifestWork(app, "cluster1", rendered, mode, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, cfg := range mw.Spec.ManifestConfigs {
			if cfg.UpdateStrategy.Type != want {
				t.Errorf("mode %q: manifest %d strategy %s, want %s", mode, i, cfg.UpdateStrategy.Type, want)
			}
		}
	}

	entry.UpdateStrategy = "ServerSideApply"
	entry.Traits[0].UpdateStrategy = "CreateOnly"
	app, rendered := renderedShop(t, entry)
	mw, err := BuildManifestWork(app, "cluster1", rendered, ApplyOnceOn, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := []workv1.UpdateStrategyType{mw.Spec.ManifestConfigs[0].UpdateStrategy.Type, mw.Spec.ManifestConfigs[1].UpdateStrategy.Type}; got[0] != "ServerSideApply" || got[1] != "CreateOnly" {
		t.Errorf("strategies with overrides = %v, want [ServerSideApply CreateOnly]", got)
	}
}

func TestManifestWorkHoldsWorkloadThenTraitsIdentifiedForTheAgent(t *testing.T) {
	app, rendered := renderedShop(t, v1alpha2.ApplicationConfigurationComponent{
		ComponentName:   "web",
		ParameterValues: []v1alpha2.ComponentParameterValue{{Name: "image", Value: raw(`"nginx:2"`)}},
		Traits:          []v1alpha2.ComponentTrait{trait("ManualScalerTrait", `{"replicaCount":3}`)},
	})
	mw, err := BuildManifestWork(app, "cluster1", rendered, ApplyOnceOff, nil)
	if err != nil {
		t.Fatal(err)
	}
	if mw.Name != "prod.shop" || mw.Namespace != "cluster1" || mw.Labels[v1alpha2.LabelAppConfigName] != "shop" || mw.Labels[v1alpha2.LabelAppConfigNamespace] != "prod" {
		t.Errorf("work %s/%s labels %v", mw.Namespace, mw.Name, mw.Labels)
	}
	if len(mw.Spec.Workload.Manifests) != 2 {
		t.Fatalf("%d manifests, want the workload and its trait", len(mw.Spec.Workload.Manifests))
	}
	var first map[string]any
	if err := json.Unmarshal(mw.Spec.Workload.Manifests[0].Raw, &first); err != nil || first["kind"] != "Deployment" {
		t.Errorf("first manifest = %v (%v), want the Deployment", first["kind"], err)
	}
	want := []workv1.ResourceIdentifier{
		{Group: "apps", Resource: "deployments", Name: "web", Namespace: "prod"},
		{Group: "core.oam.dev", Resource: "manualscalertraits", Name: "web-manualscalertrait", Namespace: "prod"},
	}
	for i, cfg := range mw.Spec.ManifestConfigs {
		if cfg.ResourceIdentifier != want[i] {
			t.Errorf("manifestConfigs[%d] identifies %+v, want %+v", i, cfg.ResourceIdentifier, want[i])
		}
	}
	if rules := mw.Spec.ManifestConfigs[0].FeedbackRules; len(rules) != 1 || rules[0].Type != workv1.WellKnownStatusType {
		t.Errorf("workload feedback rules = %v, want WellKnownStatus", rules)
	}
	if len(mw.Spec.ManifestConfigs[1].FeedbackRules) != 0 {
		t.Errorf("trait has feedback rules %v", mw.Spec.ManifestConfigs[1].FeedbackRules)
	}
}

// Component revisions: with a revisionEnabled trait, moving to a new revision keeps the earlier revision's workload
// in the work beside the new one; without one, the workload is replaced.
func TestManifestWorkKeepsEarlierRevisionWorkloadsOfRevisionEnabledComponents(t *testing.T) {
	image := []v1alpha2.ComponentParameterValue{{Name: "image", Value: raw(`"nginx:2"`)}}
	build := func(entry v1alpha2.ApplicationConfigurationComponent) (*workv1.ManifestWork, []Component) {
		app, rendered := renderedShop(t, entry)
		mw, err := BuildManifestWork(app, "cluster1", rendered, ApplyOnceOff, nil)
		if err != nil {
			t.Fatal(err)
		}
		return mw, rendered
	}
	names := func(mw *workv1.ManifestWork) []string {
		var out []string
		for _, cfg := range mw.Spec.ManifestConfigs {
			out = append(out, cfg.ResourceIdentifier.Resource+"/"+cfg.ResourceIdentifier.Name)
		}
		return out
	}

	rollout := []v1alpha2.ComponentTrait{trait("RolloutTrait", `{}`)}
	v1, _ := build(v1alpha2.ApplicationConfigurationComponent{RevisionName: "web-v1", ParameterValues: image, Traits: rollout})
	v2, rendered := build(v1alpha2.ApplicationConfigurationComponent{ComponentName: "web", ParameterValues: image, Traits: rollout})
	if err := KeepEarlierRevisions(v2, v1, rendered, 2); err != nil {
		t.Fatal(err)
	}
	want := []string{"deployments/web-v2", "rollouttraits/web-rollouttrait", "deployments/web-v1"}
	if got := names(v2); strings.Join(got, " ") != strings.Join(want, " ") || len(v2.Spec.Workload.Manifests) != 3 {
		t.Errorf("work after moving to v2 = %v (%d manifests), want %v", got, len(v2.Spec.Workload.Manifests), want)
	}
	if s := v2.Spec.ManifestConfigs[2].UpdateStrategy; s == nil || s.Type != "ApplyOnceForce" {
		t.Errorf("web-v1 kept under %v; want ApplyOnceForce, so that the rollout may scale and delete it", s)
	}
	if s := v2.Spec.ManifestConfigs[0].UpdateStrategy; s == nil || s.Type != workv1.UpdateStrategyTypeUpdate {
		t.Errorf("web-v2 under %v; want the hub's default, Update", s)
	}

	scaler := []v1alpha2.ComponentTrait{trait("ManualScalerTrait", `{"replicaCount":2}`)}
	old, _ := build(v1alpha2.ApplicationConfigurationComponent{ComponentName: "web", ParameterValues: image, Traits: scaler})
	next, rendered := build(v1alpha2.ApplicationConfigurationComponent{ComponentName: "web", ParameterValues: image, Traits: scaler})
	if err := KeepEarlierRevisions(next, old, rendered, 2); err != nil {
		t.Fatal(err)
	}
	if got := names(next); len(got) != 2 {
		t.Errorf("work without a revision-enabled trait = %v, want only the workload and its trait", got)
	}
}

// Earlier revisions beyond the kept number are retired, oldest first, each component on its own.
func TestManifestWorkRetiresTheOldestEarlierRevisions(t *testing.T) {
	workload := func(component string, n int) workv1.Manifest {
		rev := component + "-v" + strconv.Itoa(n)
		return workv1.Manifest{RawExtension: raw(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"` + rev +
			`","namespace":"prod","labels":{"` + v1alpha2.LabelComponent + `":"` + component + `","` + v1alpha2.LabelRevision + `":"` + rev +
			`","` + v1alpha2.LabelResourceType + `":"` + v1alpha2.ResourceTypeWorkload + `"}}}`)}
	}
	have := &workv1.ManifestWork{}
	for _, m := range []workv1.Manifest{workload("web", 1), workload("db", 1), workload("web", 2), workload("web", 3), workload("db", 2)} {
		have.Spec.Workload.Manifests = append(have.Spec.Workload.Manifests, m)
	}
	want := &workv1.ManifestWork{}
	want.Spec.Workload.Manifests = []workv1.Manifest{workload("web", 4), workload("db", 3)}
	rendered := []Component{
		{ComponentName: "web", RevisionName: "web-v4", RevisionEnabled: true},
		{ComponentName: "db", RevisionName: "db-v3", RevisionEnabled: true},
	}
	if err := KeepEarlierRevisions(want, have, rendered, 2); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range want.Spec.Workload.Manifests {
		var obj struct {
			Metadata struct{ Name string } `json:"metadata"`
		}
		if err := json.Unmarshal(m.Raw, &obj); err != nil {
			t.Fatal(err)
		}
		got = append(got, obj.Metadata.Name)
	}
	if strings.Join(got, " ") != "web-v4 db-v3 db-v1 web-v2 web-v3 db-v2" {
		t.Errorf("work = %v, want the current revisions, then the two newest earlier ones of each component in delivery order (web-v1 retired)", got)
	}
}

// The AppConfig's executor is every work's executor, and a change of it changes the spec hash, so
// that delivery rewrites the works.
func TestManifestWorkCarriesTheAppConfigsExecutor(t *testing.T) {
	app, rendered := renderedShop(t, v1alpha2.ApplicationConfigurationComponent{ComponentName: "web",
		ParameterValues: []v1alpha2.ComponentParameterValue{{Name: "image", Value: raw(`"nginx:2"`)}}})
	hashOf := func() string {
		t.Helper()
		mw, err := BuildManifestWork(app, "cluster1", rendered, ApplyOnceOff, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := SetSpecHash(mw, app.Generation); err != nil {
			t.Fatal(err)
		}
		if e := app.Spec.Executor; e != nil {
			got := mw.Spec.Executor
			if got == nil || got.Subject.Type != workv1.ExecutorSubjectTypeServiceAccount || got.Subject.ServiceAccount == nil ||
				*got.Subject.ServiceAccount != (workv1.ManifestWorkSubjectServiceAccount{Namespace: e.Subject.ServiceAccount.Namespace, Name: e.Subject.ServiceAccount.Name}) {
				t.Errorf("work executor %+v, want the AppConfig's %+v", got, e)
			}
		} else if mw.Spec.Executor != nil {
			t.Errorf("work executor %+v, want none", mw.Spec.Executor)
		}
		return mw.Annotations[v1alpha2.AnnotationSpecHash]
	}
	none := hashOf()
	app.Spec.Executor = &v1alpha2.Executor{Subject: v1alpha2.ExecutorSubject{Type: "ServiceAccount",
		ServiceAccount: &v1alpha2.ExecutorServiceAccount{Namespace: "apps", Name: "deployer"}}}
	deployer := hashOf()
	app.Spec.Executor.Subject.ServiceAccount.Name = "other"
	if other := hashOf(); none == deployer || deployer == other {
		t.Errorf("spec hashes without executor, with deployer, with other: %s %s %s; want three", none, deployer, other)
	}
}

// The spec hash, which names the application's revision, leaves out the AppConfig generation every
// object is stamped with: a new generation that renders the same objects is the same revision; one
// that renders something else is not.
func TestSpecHashLeavesOutTheGenerationStamp(t *testing.T) {
	entry := func(image string) v1alpha2.ApplicationConfigurationComponent {
		return v1alpha2.ApplicationConfigurationComponent{ComponentName: "web",
			ParameterValues: []v1alpha2.ComponentParameterValue{{Name: "image", Value: raw(`"` + image + `"`)}}}
	}
	hashAt := func(generation int64, image string) string {
		t.Helper()
		app, rendered := renderedShopAt(t, generation, entry(image))
		mw, err := BuildManifestWork(app, "", rendered, ApplyOnceOff, nil)
		if err != nil {
			t.Fatal(err)
		}
		stamp := fmt.Sprintf(`%q:"%d"`, v1alpha2.AnnotationAppGen, generation)
		if !strings.Contains(string(mw.Spec.Workload.Manifests[0].Raw), stamp) {
			t.Fatalf("the workload is not stamped %s: %s", stamp, mw.Spec.Workload.Manifests[0].Raw)
		}
		if err := SetSpecHash(mw, generation); err != nil {
			t.Fatal(err)
		}
		return mw.Annotations[v1alpha2.AnnotationSpecHash]
	}
	if a, b := hashAt(3, "nginx:2"), hashAt(4, "nginx:2"); a != b {
		t.Errorf("generations 3 and 4 rendering the same objects: hashes %s and %s, want the same", a, b)
	}
	if a, b := hashAt(3, "nginx:2"), hashAt(4, "nginx:3"); a == b {
		t.Errorf("another image: the same hash %s", a)
	}
}
