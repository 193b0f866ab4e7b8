package agent

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apply"
	"github.com/ferry-mc/ferry/pkg/workload"
)

func settledTestObject(rv string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"k": "v"}}}
	obj.SetAPIVersion("v1")
	obj.SetKind("ConfigMap")
	obj.SetNamespace("ns")
	obj.SetName("a")
	obj.SetUID("uid-a")
	obj.SetResourceVersion(rv)
	return obj
}

// watchedAt is the object of settledTestObject as its watch shows it at resourceVersion rv.
func watchedAt(rv string) *watchedObject {
	return &watchedObject{namespace: "ns", name: "a", resourceVersion: rv}
}

// An apply is taken again only for the same work generation, resource, owner, completion and forced
// hash, and only while the watch shows the object at the version that apply read (or, for an object
// that did not exist, still missing).
func TestSettledApplyIsTakenOnlyForTheSameAskAndVersion(t *testing.T) {
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	key := settledKey{generation: 3, resource: cms, owner: "amw-uid"}
	s := newUnchangedApplyCache()
	r := &manifestResult{Manifest: workload.Manifest{Ordinal: 1}, result: apply.Result{Operation: apply.Unchanged, Object: settledTestObject("7")},
		health: []metav1.Condition{{Type: "Progressing", Status: metav1.ConditionFalse}}}
	s.record("w", key, r)

	if kept, ok := s.lookup("w", 1, key, watchedAt("7")); !ok {
		t.Fatal("an unchanged object under the same ask was not taken as settled")
	} else if kept.result.Object.GetUID() != "uid-a" || kept.result.Object.Object["data"] != nil || len(kept.health.conditions()) != 1 {
		t.Errorf("kept %v, want the object's identity without its data, and its health", kept.result.Object.Object)
	}
	for name, tc := range map[string]struct {
		key     settledKey
		ordinal int32
		current *watchedObject
	}{
		"another version on the spoke": {key, 1, watchedAt("8")},
		"the object gone":              {key, 1, nil},
		"another work generation":      {settledKey{generation: 4, resource: cms, owner: "amw-uid"}, 1, watchedAt("7")},
		"another owner":                {settledKey{generation: 3, resource: cms, owner: "other"}, 1, watchedAt("7")},
		"now completed":                {settledKey{generation: 3, resource: cms, owner: "amw-uid", completed: true}, 1, watchedAt("7")},
		"another manifest":             {key, 0, watchedAt("7")},
	} {
		if _, ok := s.lookup("w", tc.ordinal, tc.key, tc.current); ok {
			t.Errorf("%s: taken as settled", name)
		}
	}

	missing := &manifestResult{Manifest: workload.Manifest{Ordinal: 2}, result: apply.Result{Operation: apply.Skipped}}
	s.record("w", key, missing)
	if _, ok := s.lookup("w", 2, key, nil); !ok {
		t.Error("an object that did not exist and still does not was not taken as settled")
	}
	if _, ok := s.lookup("w", 2, key, watchedAt("9")); ok {
		t.Error("an object that did not exist and now does was taken as settled")
	}

	s.fit("w", 2)
	if _, ok := s.lookup("w", 2, key, nil); ok {
		t.Error("a manifest that left the work was still kept")
	}
	s.forget("w")
	if _, ok := s.lookup("w", 1, key, watchedAt("7")); ok {
		t.Error("a forgotten work was still kept")
	}
}

// A failed or held-back apply, a CustomResourceDefinition and an ApplyOnceForce write are not kept, and
// drop what was kept, so that the next apply reads the object.
func TestOnlyAppliesThatSucceededSettle(t *testing.T) {
	key := settledKey{generation: 1}
	crd := settledTestObject("5")
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	force := &workv1.ManifestConfigOption{UpdateStrategy: &workv1.UpdateStrategy{Type: workv1.UpdateStrategyType(apply.ApplyOnceForce)}}
	for name, r := range map[string]*manifestResult{
		"failed":                     {result: apply.Result{Operation: apply.Unchanged, Object: settledTestObject("7")}, err: errors.New("conflict")},
		"waiting":                    {waiting: "waiting for the CRD"},
		"a CustomResourceDefinition": {result: apply.Result{Operation: apply.Unchanged, Object: crd}},
		"written by ApplyOnceForce":  {config: force, result: apply.Result{Operation: apply.Created, Object: settledTestObject("7")}},
		"a write without a version":  {result: apply.Result{Operation: apply.Updated, Object: settledTestObject("")}},
	} {
		s := newUnchangedApplyCache()
		s.record("w", key, &manifestResult{result: apply.Result{Operation: apply.Unchanged, Object: settledTestObject("7")}})
		s.record("w", key, r)
		if _, ok := s.lookup("w", 0, key, watchedAt("7")); ok {
			t.Errorf("%s: kept as settled", name)
		}
	}
}

// A write is kept at the version it returned, as what applying again would find: Unchanged. The read
// that would follow the write's own watch event is then not made.
func TestAWriteSettlesAtTheVersionItWrote(t *testing.T) {
	key := settledKey{generation: 1}
	for _, op := range []apply.Operation{apply.Created, apply.Updated} {
		s := newUnchangedApplyCache()
		s.record("w", key, &manifestResult{result: apply.Result{Operation: op, Object: settledTestObject("7")}})
		kept, ok := s.lookup("w", 0, key, watchedAt("7"))
		if !ok {
			t.Fatalf("%s: the object at the version written was not taken as settled", op)
		}
		if kept.result.Operation != apply.Unchanged {
			t.Errorf("%s: taken again as %s, want Unchanged", op, kept.result.Operation)
		}
		if _, ok := s.lookup("w", 0, key, watchedAt("8")); ok {
			t.Errorf("%s: taken as settled after the object changed", op)
		}
	}
}

// What is kept of the objects of one work holds their shared strings once: two objects decoded from two
// responses keep one copy of their owner and kind.
func TestSettledIdentitiesShareWhatObjectsRepeat(t *testing.T) {
	decoded := func(name string) *unstructured.Unstructured {
		obj := &unstructured.Unstructured{}
		data := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"apps","ownerReferences":[{"apiVersion":"work.open-cluster-management.io/v1","kind":"AppliedManifestWork","name":"hubhash-web","uid":"0b6c7f5e"}]}}`, name)
		if err := obj.UnmarshalJSON([]byte(data)); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	x, y := identityOf(decoded("x")), identityOf(decoded("y"))
	if owners := x.owners.references(); x.name != "x" || len(owners) != 1 || owners[0].Name != "hubhash-web" || owners[0].UID != "0b6c7f5e" {
		t.Fatalf("identity %+v, owners %+v", x, owners)
	}
	for _, pair := range [][2]string{{x.kind, y.kind}, {x.namespace, y.namespace}} {
		if !sameBytes(pair[0], pair[1]) {
			t.Errorf("%q is kept twice", pair[0])
		}
	}
	if x.owners.one != y.owners.one || x.owners.one == (unique.Handle[ownerReference]{}) {
		t.Errorf("the owner of two objects is kept twice")
	}
	// The object rebuilt from what is kept carries its owner as the API server returned it.
	want := decoded("x").GetOwnerReferences()
	if got := x.object().GetOwnerReferences(); !reflect.DeepEqual(got, want) {
		t.Errorf("owners given back %+v, want %+v", got, want)
	}
}

// Owner references and health conditions kept once are given back as they were given, pointers and all.
func TestSharedOwnersAndConditionsGiveBackWhatTheyKept(t *testing.T) {
	yes, no := true, false
	for _, refs := range [][]metav1.OwnerReference{
		nil,
		{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "9a", Controller: &yes, BlockOwnerDeletion: &no}},
		{{APIVersion: "v1", Kind: "ConfigMap", Name: "a", UID: "1"}, {APIVersion: "v1", Kind: "ConfigMap", Name: "b", UID: "2", Controller: &no}},
	} {
		if got := shareOwners(refs).references(); !reflect.DeepEqual(got, refs) {
			t.Errorf("owners %+v given back as %+v", refs, got)
		}
	}
	for _, conds := range [][]metav1.Condition{
		nil,
		{{Type: "Progressing", Status: metav1.ConditionFalse, Reason: "Current", ObservedGeneration: 2}, {Type: "Degraded", Status: metav1.ConditionFalse, Reason: "Current"}},
		{{Type: "Progressing"}, {Type: "Degraded"}, {Type: "Ready", Status: metav1.ConditionTrue}},
	} {
		kept := shareConditions(conds)
		if got := kept.conditions(); !reflect.DeepEqual(got, conds) {
			t.Errorf("conditions %+v given back as %+v", conds, got)
		}
	}
	pair := []metav1.Condition{{Type: "Progressing"}, {Type: "Degraded"}}
	if a, b := shareConditions(pair), shareConditions(slices.Clone(pair)); a.pair != b.pair {
		t.Errorf("two equal pairs of conditions are kept twice")
	}
}

// What is kept of a work's manifests is one list of their length, made before they are applied and
// filled in whatever order their applies end: no room kept for manifests the work does not have.
func TestSettledRecordsOfAWorkFitItsManifests(t *testing.T) {
	key := settledKey{generation: 1}
	s := newUnchangedApplyCache()
	s.fit("w", 5)
	for _, ordinal := range []int32{4, 0, 3, 1, 2} {
		s.record("w", key, &manifestResult{Manifest: workload.Manifest{Ordinal: ordinal},
			result: apply.Result{Operation: apply.Unchanged, Object: settledTestObject("7")}})
	}
	if records := s.byWork["w"]; len(records) != 5 || cap(records) != 5 {
		t.Errorf("5 manifests kept in a list of length %d, room for %d", len(records), cap(records))
	}
	for ordinal := range int32(5) {
		if _, ok := s.lookup("w", ordinal, key, watchedAt("7")); !ok {
			t.Errorf("manifest %d was not kept", ordinal)
		}
	}
	s.fit("w", 3)
	if records := s.byWork["w"]; len(records) != 3 || cap(records) != 3 {
		t.Errorf("3 manifests kept in a list of length %d, room for %d", len(records), cap(records))
	}
	if _, ok := s.lookup("w", 3, key, watchedAt("7")); ok {
		t.Error("a manifest that left the work was still kept")
	}
	if _, ok := s.lookup("w", 2, key, watchedAt("7")); !ok {
		t.Error("a manifest the work still has was dropped")
	}
	// A record beyond the list (a manifest applied before its work's list was fitted) makes room for it.
	s.record("w", key, &manifestResult{Manifest: workload.Manifest{Ordinal: 6},
		result: apply.Result{Operation: apply.Unchanged, Object: settledTestObject("7")}})
	if _, ok := s.lookup("w", 6, key, watchedAt("7")); !ok || cap(s.byWork["w"]) != 7 {
		t.Errorf("a manifest beyond the list was not kept, or the list holds room for %d, want 7", cap(s.byWork["w"]))
	}
}
