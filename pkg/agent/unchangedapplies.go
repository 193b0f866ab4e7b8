package agent

import (
	"slices"
	"sync"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apply"
)

// unchangedApplyCache remembers, for each manifest of each work, the last apply that found nothing to write,
// with the resourceVersion of the object it read. While the object's watch shows that same version and
// the work asks for the same thing, applying it again would read the same object and find nothing to
// write again: the result is taken from here instead, and the periodic pass of an idle work costs no
// request. Any change to the object on the spoke moves its resourceVersion, so its watch sends the work
// back to be applied with a live read — drift is still reverted within moments.
//
// An apply that wrote is kept too, at the resourceVersion its write returned, as the apply that wrote
// nothing it would be if run again: the object a write returns is the object as stored, so while the
// watch shows that version nothing has changed since, and a read would only return it once more. (That
// read was 0.78 GETs per applied object in BenchmarkAgent200WorksOf5ConfigMaps.) Applying again after
// a write would write again only where the API server keeps changing what it is sent (a mutating
// webhook, a normalized value); such a write is not repeated until the object changes.
type unchangedApplyCache struct {
	mu sync.Mutex
	// work name → by manifest ordinal: a list rather than a map, as a work's ordinals run from 0 and a
	// map kept room for 8 records (400 bytes each) where a work had 5
	byWork map[string][]settledApply
}

// settledKey is what a manifest's apply depended on besides the object itself. The work's generation
// stands for its spec: the manifest, its manifestConfig (strategy, rules), the deleteOption and the
// executor.
type settledKey struct {
	generation int64
	resource   schema.GroupVersionResource
	owner      types.UID // the AppliedManifestWork the object is owned by
	completed  bool      // only read, the manifest having completed
	forced     string    // the hash ApplyOnceForce last applied
	// only read and compared (a report-only work): an annotation, which the generation does not count
	reportOnly bool
}

// settledApply is a manifest's last apply (as one that writes nothing), and what the agent made of the
// object.
type settledApply struct {
	kept        bool // false: nothing is kept for this ordinal
	key         settledKey
	exists      bool
	object      objectIdentity // of an object that exists
	result      apply.Result   // without its Object: given again from object
	health      sharedConditions
	feedback    []workv1.FeedbackValue
	feedbackErr error
}

// objectIdentity is what the agent uses of an object after applying it — kind, name, namespace, UID,
// resourceVersion and owner references — kept in a struct rather than the maps of an Unstructured, a
// fifth of the size, so that what is kept for every applied object stays small. What the objects of a
// work share (their apiVersion, kind, namespace and owner) is held once, as in the caches.
type objectIdentity struct {
	apiVersion, kind, namespace, name, resourceVersion string
	uid                                                types.UID
	owners                                             sharedOwners
}

func identityOf(obj *unstructured.Unstructured) objectIdentity {
	return objectIdentity{apiVersion: intern(obj.GetAPIVersion()), kind: intern(obj.GetKind()), namespace: intern(obj.GetNamespace()),
		name: obj.GetName(), resourceVersion: obj.GetResourceVersion(), uid: obj.GetUID(), owners: shareOwners(obj.GetOwnerReferences())}
}

// object is the object of this identity, with nothing else.
func (id objectIdentity) object() *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	obj.SetAPIVersion(id.apiVersion)
	obj.SetKind(id.kind)
	obj.SetName(id.name)
	obj.SetNamespace(id.namespace)
	obj.SetUID(id.uid)
	obj.SetResourceVersion(id.resourceVersion)
	obj.SetOwnerReferences(id.owners.references())
	return obj
}

func newUnchangedApplyCache() *unchangedApplyCache {
	return &unchangedApplyCache{byWork: map[string][]settledApply{}}
}

// lookup returns the kept result of the manifest at ordinal of work if it was kept under key and
// current, the object as its watch shows it now (nil: it does not exist), is the version it was read at.
func (s *unchangedApplyCache) lookup(work string, ordinal int32, key settledKey, current *watchedObject) (settledApply, bool) {
	s.mu.Lock()
	var kept settledApply
	if records := s.byWork[work]; int(ordinal) < len(records) {
		kept = records[ordinal]
	}
	s.mu.Unlock()
	switch {
	case !kept.kept || kept.key != key:
		return settledApply{}, false
	case current == nil:
		return kept, !kept.exists
	case !kept.exists || current.resourceVersion != kept.object.resourceVersion:
		return settledApply{}, false
	}
	kept.result.Object = kept.object.object()
	return kept, true
}

// record keeps r as the manifest's settled apply when it failed nothing, and drops what was kept
// otherwise. An apply that wrote is kept as Unchanged: what applying it again finds.
func (s *unchangedApplyCache) record(work string, key settledKey, r *manifestResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	records := s.byWork[work]
	if !settles(r) {
		if int(r.Ordinal) < len(records) {
			records[r.Ordinal] = settledApply{}
		}
		return
	}
	kept := settledApply{
		kept:        true,
		key:         key,
		exists:      r.exists(),
		result:      r.result,
		health:      shareConditions(r.health),
		feedback:    r.feedback,
		feedbackErr: r.feedbackErr,
	}
	kept.result.Operation = apply.Unchanged
	// Taken again, the apply finds nothing changed on the cluster: the drift it put back was this one's.
	kept.result.Drift = nil
	if r.result.Operation == apply.Skipped {
		kept.result.Operation = apply.Skipped // with its message: a strategy's choice, made again
	}
	kept.result.Object = nil
	if kept.exists {
		kept.object = identityOf(r.result.Object)
	}
	if int(r.Ordinal) >= len(records) {
		records = s.fitLocked(work, int(r.Ordinal)+1)
	}
	records[r.Ordinal] = kept
}

// settles reports whether a manifest's apply may be taken as its result again while its object is
// unchanged.
func settles(r *manifestResult) bool {
	if r.err != nil || r.waiting != "" {
		return false
	}
	switch r.result.Operation {
	case apply.Unchanged, apply.Skipped:
	case apply.Created, apply.Updated:
		if r.exists() && r.result.Object.GetResourceVersion() == "" {
			return false // not the object as stored
		}
		// ApplyOnceForce records the hash of what it wrote in the AppliedManifestWork after the apply;
		// until that record is in, the write must be seen again as a write.
		if optionsFor(r.config).Strategy == apply.ApplyOnceForce {
			return false
		}
	default:
		return false
	}
	// A CustomResourceDefinition's conditions decide when the kinds it defines are applied: keep
	// reading it. (A work has few.)
	return !r.exists() || r.result.Object.GroupVersionKind().GroupKind() != crdGK
}

// fit makes room for the n manifests of work (before they are applied, so that the list is made once,
// to its length) and drops what is kept of manifests at or beyond n: they left the work.
func (s *unchangedApplyCache) fit(work string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fitLocked(work, n)
}

func (s *unchangedApplyCache) fitLocked(work string, n int) []settledApply {
	records := s.byWork[work]
	switch {
	case n == 0:
		records = nil
	case n < len(records):
		records = slices.Clip(records[:n])
	case n > len(records):
		records = append(make([]settledApply, 0, n), records...)[:n]
	}
	s.byWork[work] = records
	return records
}

// forget drops everything kept of work.
func (s *unchangedApplyCache) forget(work string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byWork, work)
}

// What objects repeat is kept once in the settled records, as the caches keep the strings they repeat:
// the objects of a work have the same owner, and objects of a kind in the same state the same health.
// unique keeps one copy of each value for as long as a record holds it; a record holds a handle (a
// pointer) instead of its own copy: 8 bytes rather than a list of its own (the two built-in health
// conditions are 216 bytes, an owner reference 120).

// sharedConditions is a list of conditions kept once for all records with the same list. Lists of two
// (the built-in Progressing and Degraded, as nearly every object has) are shared; others (conditionRules
// add their own) are kept as they are.
type sharedConditions struct {
	pair  unique.Handle[[2]metav1.Condition]
	other []metav1.Condition // when not a pair
}

func shareConditions(conds []metav1.Condition) sharedConditions {
	if len(conds) == 2 {
		return sharedConditions{pair: unique.Make([2]metav1.Condition(conds))}
	}
	return sharedConditions{other: conds}
}

// conditions returns the list: a new one each time, that the caller may keep.
func (c sharedConditions) conditions() []metav1.Condition {
	if c.pair != (unique.Handle[[2]metav1.Condition]{}) {
		pair := c.pair.Value()
		return pair[:]
	}
	return c.other
}

// sharedOwners is an object's owner references, kept once for all objects with the same owners when an
// object has one (as the objects of a work do: its AppliedManifestWork).
type sharedOwners struct {
	one   unique.Handle[ownerReference]
	other []metav1.OwnerReference // when not exactly one
}

// ownerReference is a metav1.OwnerReference by value: comparable, so that unique can keep it.
type ownerReference struct {
	apiVersion, kind, name string
	uid                    types.UID
	controller, block      optionalBool
}

type optionalBool uint8

const (
	unset optionalBool = iota
	isFalse
	isTrue
)

func optional(b *bool) optionalBool {
	switch {
	case b == nil:
		return unset
	case *b:
		return isTrue
	}
	return isFalse
}

func (b optionalBool) pointer() *bool {
	if b == unset {
		return nil
	}
	v := b == isTrue
	return &v
}

func shareOwners(refs []metav1.OwnerReference) sharedOwners {
	if len(refs) != 1 {
		return sharedOwners{other: refs} // (rare: the objects a work applies have one owner, its own)
	}
	r := refs[0]
	return sharedOwners{one: unique.Make(ownerReference{apiVersion: r.APIVersion, kind: r.Kind, name: r.Name, uid: r.UID,
		controller: optional(r.Controller), block: optional(r.BlockOwnerDeletion)})}
}

// references returns the owner references: a new list each time, that the caller may keep.
func (o sharedOwners) references() []metav1.OwnerReference {
	if o.one == (unique.Handle[ownerReference]{}) {
		return o.other
	}
	r := o.one.Value()
	return []metav1.OwnerReference{{APIVersion: r.apiVersion, Kind: r.kind, Name: r.name, UID: r.uid,
		Controller: r.controller.pointer(), BlockOwnerDeletion: r.block.pointer()}}
}
