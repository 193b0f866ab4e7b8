package agent

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apply"
)

// decodedWork is a work as an informer gets it: decoded from the JSON the API server sends, with a
// status of five manifests and the conditions the agent reports.
func decodedWork(t *testing.T, name string) *workv1.ManifestWork {
	t.Helper()
	w := workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "cluster1",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "ferry-agent", Operation: metav1.ManagedFieldsOperationUpdate}}}}
	applied := func(i int) []metav1.Condition {
		return []metav1.Condition{
			{Type: "Applied", Status: metav1.ConditionTrue, Reason: "AppliedManifestComplete", Message: "Apply manifest complete"},
			{Type: "Available", Status: metav1.ConditionTrue, Reason: "ResourceAvailable", Message: fmt.Sprintf("Resource %d is available", i)},
		}
	}
	w.Status.Conditions = applied(-1)
	for i := range 5 {
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{
			Raw: fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s-%d","namespace":"apps"}}`, name, i)}})
	}
	for i := range 5 {
		w.Status.ResourceStatus.Manifests = append(w.Status.ResourceStatus.Manifests, workv1.ManifestCondition{
			ResourceMeta: workv1.ManifestResourceMeta{Ordinal: int32(i), Version: "v1", Kind: "ConfigMap", Resource: "configmaps",
				Name: fmt.Sprintf("%s-%d", name, i), Namespace: "apps"},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{{Name: "replicas"}}},
			Conditions:      applied(i),
		})
	}
	data, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	var decoded workv1.ManifestWork
	if err := json.Unmarshal(data, &decoded); err != nil {
		t.Fatal(err)
	}
	return &decoded
}

func sameBytes(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// What the caches keep of a work reads exactly as the API server sent it, less managedFields, and two
// works share one copy of the strings they repeat, with lists no longer than they are.
func TestCompactCachedKeepsWhatAWorkSaysOnce(t *testing.T) {
	a, b := decodedWork(t, "a"), decodedWork(t, "b")
	want := a.DeepCopy()
	want.ManagedFields = nil
	if _, err := compactCached(a); err != nil {
		t.Fatal(err)
	}
	if _, err := compactCached(b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("the cached work differs from the one the API server sent:\n got %+v\nwant %+v", a.Status, want.Status)
	}
	ma, mb := a.Status.ResourceStatus.Manifests, b.Status.ResourceStatus.Manifests
	if cap(ma) != len(ma) {
		t.Errorf("the manifests' statuses hold room for %d of %d", cap(ma), len(ma))
	}
	if ms := a.Spec.Workload.Manifests; cap(ms) != len(ms) {
		t.Errorf("the manifests hold room for %d of %d", cap(ms), len(ms))
	}
	for _, pair := range [][2]string{
		{ma[0].Conditions[0].Reason, mb[3].Conditions[0].Reason},
		{ma[0].Conditions[0].Message, a.Status.Conditions[0].Message},
		{string(ma[1].Conditions[1].Status), string(mb[2].Conditions[0].Status)},
		{ma[0].ResourceMeta.Kind, mb[4].ResourceMeta.Kind},
		{ma[2].ResourceMeta.Namespace, mb[2].ResourceMeta.Namespace},
		{ma[2].StatusFeedbacks.Values[0].Name, mb[1].StatusFeedbacks.Values[0].Name},
	} {
		if !sameBytes(pair[0], pair[1]) {
			t.Errorf("%q is held twice", pair[0])
		}
	}
	// A work with no status keeps none, rather than empty lists that would differ from the server's.
	empty := &workv1.ManifestWork{}
	if _, err := compactCached(empty); err != nil {
		t.Fatal(err)
	}
	if empty.Status.Conditions != nil || empty.Status.ResourceStatus.Manifests != nil {
		t.Errorf("an empty status became %+v", empty.Status)
	}
}

// An AppliedManifestWork keeps its applied resources, in a list as long as they are, the strings they
// share with other works held once.
func TestCompactCachedFitsAnAppliedManifestWork(t *testing.T) {
	var amws [2]*workv1.AppliedManifestWork
	for i := range amws {
		amw := workv1.AppliedManifestWork{}
		for j := range 5 {
			amw.Status.AppliedResources = append(amw.Status.AppliedResources, workv1.AppliedManifestResourceMeta{
				ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "apps", Name: fmt.Sprint(i, j)}, Version: "v1", UID: "u"})
		}
		data, err := json.Marshal(amw)
		if err != nil {
			t.Fatal(err)
		}
		amws[i] = &workv1.AppliedManifestWork{}
		if err := json.Unmarshal(data, amws[i]); err != nil {
			t.Fatal(err)
		}
	}
	want := amws[0].DeepCopy()
	for _, amw := range amws {
		if _, err := compactCached(amw); err != nil {
			t.Fatal(err)
		}
	}
	rs := amws[0].Status.AppliedResources
	if !reflect.DeepEqual(amws[0], want) || cap(rs) != len(rs) {
		t.Errorf("the cached AppliedManifestWork differs or holds room for %d of %d: %+v", cap(rs), len(rs), rs)
	}
	if other := amws[1].Status.AppliedResources[3]; !sameBytes(rs[0].Resource, other.Resource) || !sameBytes(rs[0].Version, other.Version) {
		t.Errorf("%q is held twice", rs[0].Resource)
	}
}

// Of an applied object the agent's watch keeps what the agent reads: its identity, its owners (the
// objects of one work sharing their owner's strings) and the hash of its last-applied record, not the
// record (a copy of the whole manifest), its labels or its finalizers.
func TestCompactCachedKeepsOfAnObjectWhatTheAgentReads(t *testing.T) {
	record := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"apps"},"spec":{"replicas":3}}`
	object := func(name string) *metav1.PartialObjectMetadata {
		m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps", UID: "u-" + types.UID(name), ResourceVersion: "7",
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{apply.LastAppliedAnnotation: record, "deployment.kubernetes.io/revision": "2"},
			Finalizers:  []string{"example.com/keep"},
		}}
		data := fmt.Appendf(nil, `[{"apiVersion":"work.open-cluster-management.io/v1","kind":"AppliedManifestWork","name":"hubhash-web","uid":"0b6c7f5e"}]`)
		if err := json.Unmarshal(data, &m.OwnerReferences); err != nil {
			t.Fatal(err)
		}
		return m
	}
	x, y := object("x"), object("y")
	want := x.DeepCopy()
	for _, o := range []*metav1.PartialObjectMetadata{x, y} {
		if _, err := compactCached(o); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := apply.AppliedHash(x.Annotations), apply.AppliedHash(want.Annotations); got != want || got == "" {
		t.Errorf("the cached metadata gives the record's hash %q, want %q", got, want)
	}
	if strings.Contains(fmt.Sprint(x.Annotations), "replicas") || x.Labels != nil || x.Finalizers != nil {
		t.Errorf("the cached metadata keeps what the agent does not read: %+v", x.ObjectMeta)
	}
	x.Annotations, x.Labels, x.Finalizers = want.Annotations, want.Labels, want.Finalizers
	if !reflect.DeepEqual(x, want) {
		t.Fatalf("the cached identity or owners differ: %+v, want %+v", x, want)
	}
	rx, ry := x.OwnerReferences[0], y.OwnerReferences[0]
	if !sameBytes(rx.Name, ry.Name) || !sameBytes(string(rx.UID), string(ry.UID)) || !sameBytes(rx.APIVersion, ry.APIVersion) {
		t.Errorf("the owner of two objects is held twice")
	}
	// An object without a record (written under ServerSideApply, or by someone else) keeps no annotations.
	ssa := object("z")
	delete(ssa.Annotations, apply.LastAppliedAnnotation)
	if _, err := compactCached(ssa); err != nil {
		t.Fatal(err)
	}
	if ssa.Annotations != nil {
		t.Errorf("an object without a record keeps annotations %v", ssa.Annotations)
	}
}
