package agent

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apply"
)

// decodedWork is a work as an informer gets it: decoded from the JSON the API server sends, with a
// status of five manifests and the conditions the agent reports.
func decodedWork(t *testing.T, name string) *workv1.ManifestWork {
	t.Helper()
	w := workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "cluster1", Finalizers: []string{workv1.ManifestWorkFinalizer},
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
		{a.Namespace, b.Namespace},
		{a.Finalizers[0], b.Finalizers[0]},
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
		amw := workv1.AppliedManifestWork{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("hubhash-w", i), Finalizers: []string{"cluster.open-cluster-management.io/applied-manifest-work-cleanup"}},
			Spec: workv1.AppliedManifestWorkSpec{HubHash: strings.Repeat("5e", 32), AgentID: "cluster1-agent", ManifestWorkName: fmt.Sprint("w", i)}}
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
	x, y := amws[0], amws[1]
	if !sameBytes(x.Spec.HubHash, y.Spec.HubHash) || !sameBytes(x.Spec.AgentID, y.Spec.AgentID) || !sameBytes(x.Finalizers[0], y.Finalizers[0]) {
		t.Errorf("what every AppliedManifestWork of the agent repeats (hub hash, agent, finalizer) is held twice")
	}
	if other := amws[1].Status.AppliedResources[3]; !sameBytes(rs[0].Resource, other.Resource) || !sameBytes(rs[0].Version, other.Version) {
		t.Errorf("%q is held twice", rs[0].Resource)
	}
}

// Of an applied object the agent's watch keeps what the agent reads: its name, namespace and
// resourceVersion (what the informer keys and compares by), the AppliedManifestWork that holds it (the
// objects of one work sharing their owner's strings) and the hash of its last-applied record — not the
// record (a copy of the whole manifest), its labels, finalizers or other owners.
func TestWatchedObjectKeepsWhatTheAgentReads(t *testing.T) {
	record := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"apps"},"spec":{"replicas":3}}`
	object := func(name string) *metav1.PartialObjectMetadata {
		m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps", UID: "u-" + types.UID(name), ResourceVersion: "7",
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{apply.LastAppliedAnnotation: record, "deployment.kubernetes.io/revision": "2"},
			Finalizers:  []string{"example.com/keep"},
		}}
		data := fmt.Appendf(nil, `[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-1","uid":"9a"},`+
			`{"apiVersion":"work.open-cluster-management.io/v1","kind":"AppliedManifestWork","name":"hubhash-web","uid":"0b6c7f5e"}]`)
		if err := json.Unmarshal(data, &m.OwnerReferences); err != nil {
			t.Fatal(err)
		}
		return m
	}
	watched := func(m *metav1.PartialObjectMetadata) *watchedObject {
		t.Helper()
		out, err := watchedObjectOf(m)
		if err != nil {
			t.Fatal(err)
		}
		w, ok := out.(*watchedObject)
		if !ok {
			t.Fatalf("the watch keeps a %T", out)
		}
		return w
	}
	x, y := watched(object("x")), watched(object("y"))
	want := watchedObject{namespace: "apps", name: "x", resourceVersion: "7",
		heldBy: appliedWorkOwner{name: "hubhash-web", uid: "0b6c7f5e"}, appliedHash: apply.AppliedHash(map[string]string{apply.LastAppliedAnnotation: record})}
	if *x != want {
		t.Errorf("the watch keeps %+v, want %+v", *x, want)
	}
	if !sameBytes(x.heldBy.name, y.heldBy.name) || !sameBytes(string(x.heldBy.uid), string(y.heldBy.uid)) || !sameBytes(x.namespace, y.namespace) {
		t.Errorf("the owner of two objects is held twice")
	}
	// The informer keys and compares what it keeps by its metadata, and transforms an object again when
	// it resyncs: the transform must give it back as it is.
	if key, err := cache.MetaNamespaceKeyFunc(x); err != nil || key != "apps/x" {
		t.Errorf("the informer keys the kept object as %q (%v), want apps/x", key, err)
	}
	if m, err := meta.Accessor(x); err != nil || m.GetResourceVersion() != "7" {
		t.Errorf("the informer reads the kept object's resourceVersion as %v (%v), want 7", m, err)
	}
	if again, err := watchedObjectOf(x); err != nil || again != any(x) {
		t.Errorf("transformed again: %v (%v), want the same object", again, err)
	}
	// An object without a record (written under ServerSideApply, or by someone else) and without an
	// AppliedManifestWork among its owners.
	bare := object("z")
	delete(bare.Annotations, apply.LastAppliedAnnotation)
	bare.OwnerReferences = bare.OwnerReferences[:1]
	if z := watched(bare); z.appliedHash != "" || z.heldBy != (appliedWorkOwner{}) {
		t.Errorf("an object without a record or holder is kept as %+v", *z)
	}
}
