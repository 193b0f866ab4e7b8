package hub

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// The patch that writes a work's new spec holds against whatever the API server stores now: the spec
// becomes exactly the wanted one even when the stored spec has fields the cache never showed (an
// earlier write of the hub's), others' labels and annotations and the agent's status stay, and the
// revision's start moves only with the spec hash. A work made again under the same name is not patched.
func TestWorkPatchGivesTheStoredWorkExactlyTheWantedSpec(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	manifest := func(s string) workv1.Manifest {
		return workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(s)}}
	}
	want := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "shop",
			Labels:      map[string]string{LabelAppConfigNamespace: "default", LabelAppConfigName: "shop"},
			Annotations: map[string]string{AnnotationSpecHash: "new"}},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
			manifest(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"prod"}}`)}}},
	}
	cached := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "shop", UID: "uid-1",
			Labels:      map[string]string{LabelAppConfigNamespace: "default", LabelAppConfigName: "shop", "team": "payments"},
			Annotations: map[string]string{AnnotationSpecHash: "old", "note": "kept", AnnotationRevisionSince: "2026-11-24T00:00:00Z"}},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
			manifest(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"prod"}}`),
			manifest(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","namespace":"prod"}}`)}}},
	}
	// What the API server stores has moved on since the cache saw it: an earlier write of the hub's
	// added a delete option and an executor, and the agent wrote a status.
	stored := cached.DeepCopy()
	stored.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}
	stored.Spec.Executor = &workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{Type: workv1.ExecutorSubjectTypeServiceAccount,
		ServiceAccount: &workv1.ManifestWorkSubjectServiceAccount{Namespace: "prod", Name: "deployer"}}}
	stored.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete"}}

	patched := applyWorkPatch(t, cached, want, stored, now)
	if !reflect.DeepEqual(patched.Spec, want.Spec) {
		t.Errorf("spec after the patch:\n%+v\nwant exactly:\n%+v", patched.Spec, want.Spec)
	}
	wantLabels := map[string]string{LabelAppConfigNamespace: "default", LabelAppConfigName: "shop", "team": "payments"}
	if !reflect.DeepEqual(patched.Labels, wantLabels) {
		t.Errorf("labels %v, want %v", patched.Labels, wantLabels)
	}
	wantAnnotations := map[string]string{AnnotationSpecHash: "new", "note": "kept", AnnotationRevisionSince: now.Format(time.RFC3339)}
	if !reflect.DeepEqual(patched.Annotations, wantAnnotations) {
		t.Errorf("annotations %v, want %v", patched.Annotations, wantAnnotations)
	}
	if !reflect.DeepEqual(patched.Status, stored.Status) {
		t.Errorf("status after the patch %+v, want the agent's %+v", patched.Status, stored.Status)
	}

	t.Run("same hash, new labels", func(t *testing.T) {
		cached := cached.DeepCopy()
		cached.Annotations[AnnotationSpecHash] = "new"
		want := want.DeepCopy()
		want.Labels["ferry.io/placement"] = "edge"
		patched := applyWorkPatch(t, cached, want, cached.DeepCopy(), now)
		if got := patched.Annotations[AnnotationRevisionSince]; got != "2026-11-24T00:00:00Z" {
			t.Errorf("%s moved to %s with the spec hash unchanged", AnnotationRevisionSince, got)
		}
		if patched.Labels["ferry.io/placement"] != "edge" {
			t.Errorf("labels %v lack the new one", patched.Labels)
		}
		if !reflect.DeepEqual(patched.Spec, cached.Spec) {
			t.Errorf("the spec was written with its hash unchanged: %+v", patched.Spec)
		}
	})
	t.Run("the same revision rendered again for its cluster", func(t *testing.T) {
		// A cluster's facts changed: its spec is new, its revision is not, and neither is the revision's start.
		cached := cached.DeepCopy()
		cached.Annotations[AnnotationRevisionHash] = "rev-1"
		want := want.DeepCopy()
		want.Annotations[AnnotationRevisionHash] = "rev-1"
		patched := applyWorkPatch(t, cached, want, cached.DeepCopy(), now)
		if patched.Annotations[AnnotationSpecHash] != "new" || patched.Annotations[AnnotationRevisionHash] != "rev-1" {
			t.Errorf("annotations %v, want spec hash new of revision rev-1", patched.Annotations)
		}
		if got := patched.Annotations[AnnotationRevisionSince]; got != "2026-11-24T00:00:00Z" {
			t.Errorf("%s moved to %s with the revision unchanged", AnnotationRevisionSince, got)
		}
		// And a revision without overrides after it: the work says it carries that revision.
		patched = applyWorkPatch(t, patched, want.DeepCopy(), patched.DeepCopy(), now)
		plain := want.DeepCopy()
		delete(plain.Annotations, AnnotationRevisionHash)
		plain.Annotations[AnnotationSpecHash] = "plain"
		patched = applyWorkPatch(t, patched, plain, patched.DeepCopy(), now)
		if rev := v1alpha2.WorkRevision(patched.Annotations); rev != "plain" {
			t.Errorf("revision %s after a revision without overrides, want plain (annotations %v)", rev, patched.Annotations)
		}
	})
	t.Run("no annotations yet", func(t *testing.T) {
		cached := cached.DeepCopy()
		cached.Annotations = nil
		patched := applyWorkPatch(t, cached, want, cached.DeepCopy(), now)
		if patched.Annotations[AnnotationSpecHash] != "new" || patched.Annotations[AnnotationRevisionSince] == "" {
			t.Errorf("annotations %v, want the spec hash and the revision's start", patched.Annotations)
		}
	})
	t.Run("made again", func(t *testing.T) {
		other := stored.DeepCopy()
		other.UID = "uid-2"
		patch, err := workPatch(cached, want, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := applyJSONPatch(other, patch); err == nil {
			t.Error("the patch applied to a work of another UID; want its test to fail")
		}
	})
}

// applyWorkPatch builds the patch from cached to want and applies it to stored as the API server does.
func applyWorkPatch(t *testing.T, cached, want, stored *workv1.ManifestWork, now time.Time) *workv1.ManifestWork {
	t.Helper()
	patch, err := workPatch(cached, want, now)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := applyJSONPatch(stored, patch)
	if err != nil {
		t.Fatalf("apply %s: %v", patch, err)
	}
	return patched
}

func applyJSONPatch(mw *workv1.ManifestWork, patch []byte) (*workv1.ManifestWork, error) {
	doc, err := json.Marshal(mw)
	if err != nil {
		return nil, err
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, err
	}
	out, err := p.Apply(doc)
	if err != nil {
		return nil, err
	}
	patched := &workv1.ManifestWork{}
	return patched, json.Unmarshal(out, patched)
}

// The hub's memory of its own writes: a work written with the hash wanted is not written again while
// the cache shows it from before — also after the cache caught up with an agent's status write, and
// for as long as the cache stays behind (by resourceVersion); another hash, a cache showing the write
// or a later version, or a work deleted since is written, also one this hub created moments before
// someone deleted it.
func TestOwnWritesStandUntilTheCacheMovesOn(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	app := types.NamespacedName{Namespace: "default", Name: "shop"}
	work := types.NamespacedName{Namespace: "cluster1", Name: "default.shop"}
	cached := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "10", Annotations: map[string]string{AnnotationSpecHash: "h1"}}}
	var o recentWorkWrites
	if o.unseen(app, work, cached, "h2", t0) {
		t.Fatal("a work never written is unseen")
	}
	o.record(app, work, cached, "h2", written("uid-1", "12"), t0)
	if !o.unseen(app, work, cached, "h2", t0.Add(time.Second)) {
		t.Error("the work written over the cached version is not remembered")
	}
	reported := cached.DeepCopy() // the agent wrote the status of the version before the hub's write
	reported.ResourceVersion = "11"
	if !o.unseen(app, work, reported, "h2", t0.Add(time.Second)) {
		t.Error("the write is forgotten when the cache shows a status write from before it")
	}
	if !o.unseen(app, work, reported, "h2", t0.Add(2*ownWriteFresh)) {
		t.Error("the write is forgotten while the cache is behind it for longer than ownWriteFresh")
	}
	changedSince := cached.DeepCopy() // someone replaced the spec after the hub's write
	changedSince.ResourceVersion = "13"
	unversioned := cached.DeepCopy()
	unversioned.ResourceVersion = "x"
	for name, unseen := range map[string]bool{
		"another hash wanted":          o.unseen(app, work, cached, "h3", t0.Add(time.Second)),
		"the cache shows a later spec": o.unseen(app, work, changedSince, "h2", t0.Add(time.Second)),
		"the write is very old":        o.unseen(app, work, cached, "h2", t0.Add(ownWriteKept)),
		"versions do not tell, old":    o.unseen(app, work, unversioned, "h2", t0.Add(ownWriteFresh)),
		"deleted since":                o.unseen(app, work, nil, "h2", t0.Add(time.Second)),
		"another AppConfig's":          o.unseen(types.NamespacedName{Namespace: "default", Name: "other"}, work, cached, "h2", t0),
	} {
		if unseen {
			t.Errorf("%s: the write still counts; want it written again", name)
		}
	}
	created := types.NamespacedName{Namespace: "cluster2", Name: "default.shop"}
	o.record(app, created, nil, "h2", written("uid-2", "20"), t0)
	if !o.unseen(app, created, nil, "h2", t0.Add(time.Second)) {
		t.Error("a work created moments ago, not in the cache yet, is created again")
	}
	o.deleted(app, created, "uid-earlier") // an earlier work of that name, reported gone late
	if !o.unseen(app, created, nil, "h2", t0.Add(time.Second)) {
		t.Error("the deletion of an earlier work of the same name makes the one just created be created again")
	}
	o.deleted(app, created, "uid-2") // someone deleted it: the cache showed it, then its deletion
	if o.unseen(app, created, nil, "h2", t0.Add(time.Second)) {
		t.Error("a work someone deleted moments after this hub created it is not put back until its write is old")
	}
	o.record(app, created, nil, "h2", written("uid-3", "30"), t0)
	o.forget(app, created) // this hub deleted it: the cluster left the placement
	if o.unseen(app, created, nil, "h2", t0.Add(time.Second)) {
		t.Error("a work this hub deleted is not created again when its cluster comes back at once")
	}
	cache := map[types.NamespacedName]metav1.Object{work: reported}
	cachedAs := func(w types.NamespacedName) metav1.Object { return cache[w] }
	o.forgetOld(app, cachedAs, t0.Add(ownWriteFresh))
	if _, kept := o.byApp[app][work]; !kept {
		t.Error("a write the cache is still behind is forgotten after ownWriteFresh")
	}
	cache[work] = changedSince
	o.forgetOld(app, cachedAs, t0.Add(ownWriteFresh))
	if len(o.byApp) != 0 {
		t.Errorf("writes the cache caught up with kept: %v", o.byApp)
	}
	o.record(app, work, cached, "h2", written("uid-1", "12"), t0)
	cache[work] = reported
	o.forgetOld(app, cachedAs, t0.Add(ownWriteKept))
	if len(o.byApp) != 0 {
		t.Errorf("writes older than ownWriteKept kept: %v", o.byApp)
	}
}

// written is a work as the API server answers a write: its UID and resourceVersion.
func written(uid types.UID, version string) metav1.Object {
	return &metav1.ObjectMeta{UID: uid, ResourceVersion: version}
}

// A work is up to date when it carries the wanted spec, revision and labels: a cluster no override
// selects keeps its spec when only the overrides change, and still moves to the new revision.
func TestUpToDateComparesSpecRevisionAndLabels(t *testing.T) {
	work := func(spec, revision string, labels map[string]string) *workv1.ManifestWork {
		mw := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{AnnotationSpecHash: spec}}}
		if revision != "" {
			mw.Annotations[AnnotationRevisionHash] = revision
		}
		return mw
	}
	app := map[string]string{LabelAppConfigName: "shop"}
	for _, c := range []struct {
		name       string
		have, want *workv1.ManifestWork
		upToDate   bool
	}{
		{"same spec, no overrides", work("s1", "", app), work("s1", "", app), true},
		{"same spec and revision", work("s1", "r1", app), work("s1", "r1", app), true},
		{"a new spec", work("s1", "r1", app), work("s2", "r1", app), false},
		{"the same spec of another revision", work("s1", "r1", app), work("s1", "r2", app), false},
		{"overrides gone: the spec is the revision", work("s1", "r1", app), work("s1", "", app), false},
		{"the revision named, as it was implied", work("s1", "", app), work("s1", "s1", app), true},
		{"a label missing", work("s1", "", nil), work("s1", "", app), false},
	} {
		if got := upToDate(c.have, c.want); got != c.upToDate {
			t.Errorf("%s: upToDate = %t, want %t", c.name, got, c.upToDate)
		}
	}
}
