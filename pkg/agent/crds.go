package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// crdTracker watches the spoke's CustomResourceDefinitions so that the agent knows, without polling,
// which custom kinds the spoke serves and how. It resets the REST mapper whenever a definition changes
// what it serves (a kind added, removed, its scope or versions changed, Established turning on), so
// that a manifest's strategy, manifestConfig and watch are chosen from a mapping that matches the spoke,
// and it requeues the works that wait for a kind as soon as a definition of it is Established.
type crdTracker struct {
	informer cache.SharedIndexInformer
	mapper   meta.RESTMapper
	enqueue  func(work string)

	mu      sync.Mutex
	byName  map[string]crdSummary
	waiting map[schema.GroupKind]map[string]bool // kind → works to requeue once it is served
	// lastReset is when the mapper was last reset; a miss resets it again only after minMapperReset, so
	// that works naming a kind nobody serves do not re-read discovery over and over.
	lastReset time.Time
}

// minMapperReset bounds how often a kind the mapper does not know makes it re-read discovery.
const minMapperReset = time.Second

// crdSummary is what the agent needs of a CustomResourceDefinition; the informer keeps only this, so
// large CRDs (their schemas) cost no memory.
type crdSummary struct {
	kind        schema.GroupKind
	namespaced  bool
	versions    []string // served
	established bool
}

func newCRDTracker(client dynamic.Interface, mapper meta.RESTMapper, enqueue func(string)) (*crdTracker, error) {
	t := &crdTracker{
		mapper:  mapper,
		enqueue: enqueue,
		byName:  map[string]crdSummary{},
		waiting: map[schema.GroupKind]map[string]bool{},
	}
	t.informer = dynamicinformer.NewFilteredDynamicInformer(client, crdGVR, "", 0, cache.Indexers{}, nil).Informer()
	if err := t.informer.SetTransform(trimCRD); err != nil {
		return nil, fmt.Errorf("CustomResourceDefinition informer: %w", err)
	}
	_, err := t.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.observe(obj, false) },
		UpdateFunc: func(_, obj any) { t.observe(obj, false) },
		DeleteFunc: func(obj any) { t.observe(obj, true) },
	})
	if err != nil {
		return nil, fmt.Errorf("CustomResourceDefinition informer: %w", err)
	}
	return t, nil
}

// run runs the informer until ctx is done.
func (t *crdTracker) run(ctx context.Context) { t.informer.Run(ctx.Done()) }

func (t *crdTracker) hasSynced() bool { return t.informer.HasSynced() }

// trimCRD keeps of a CustomResourceDefinition only the fields summarize reads.
func trimCRD(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	out := &unstructured.Unstructured{Object: map[string]any{}}
	out.SetAPIVersion(u.GetAPIVersion())
	out.SetKind(u.GetKind())
	out.SetName(u.GetName())
	out.SetUID(u.GetUID())
	out.SetResourceVersion(u.GetResourceVersion())
	s := summarize(u)
	versions := make([]any, 0, len(s.versions))
	for _, v := range s.versions {
		versions = append(versions, map[string]any{"name": v, "served": true})
	}
	scope := "Cluster"
	if s.namespaced {
		scope = "Namespaced"
	}
	out.Object["spec"] = map[string]any{
		"group": s.kind.Group, "names": map[string]any{"kind": s.kind.Kind}, "scope": scope, "versions": versions,
	}
	if s.established {
		out.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Established", "status": "True"}}}
	}
	return out, nil
}

func summarize(crd *unstructured.Unstructured) crdSummary {
	kind, _ := crdKind(crd)
	scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
	s := crdSummary{kind: kind, namespaced: scope == "Namespaced", established: established(crd)}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if name, _ := m["name"].(string); name != "" && m["served"] == true {
			s.versions = append(s.versions, name)
		}
	}
	return s
}

func (s crdSummary) equal(o crdSummary) bool {
	return s.kind == o.kind && s.namespaced == o.namespaced && s.established == o.established && slices.Equal(s.versions, o.versions)
}

// observe records a definition's change; when it changes what the spoke serves, the mapper forgets
// what it knew, and works waiting for a kind it now serves are requeued.
func (t *crdTracker) observe(obj any, deleted bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	s := summarize(u)
	t.mu.Lock()
	old, had := t.byName[u.GetName()]
	if deleted {
		delete(t.byName, u.GetName())
	} else {
		t.byName[u.GetName()] = s
	}
	changed := deleted || !had || !old.equal(s)
	var requeue []string
	if changed {
		t.resetLocked()
		if !deleted && s.established {
			for work := range t.waiting[s.kind] {
				requeue = append(requeue, work)
			}
			delete(t.waiting, s.kind)
		}
	}
	t.mu.Unlock()
	for _, work := range requeue {
		t.enqueue(work)
	}
}

func (t *crdTracker) resetLocked() {
	if r, ok := t.mapper.(meta.ResettableRESTMapper); ok {
		r.Reset()
	}
	t.lastReset = time.Now()
}

// definition returns the Established definition of a kind the spoke's CRDs define, if any.
func (t *crdTracker) definition(kind schema.GroupKind) (crdSummary, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.definitionLocked(kind)
}

func (t *crdTracker) definitionLocked(kind schema.GroupKind) (crdSummary, bool) {
	for _, s := range t.byName {
		if s.kind == kind && s.established {
			return s, true
		}
	}
	return crdSummary{}, false
}

// waitFor makes sure work is requeued once kind is served by an Established definition. It reports
// whether the kind is served already, in which case nothing is registered.
func (t *crdTracker) waitFor(kind schema.GroupKind, work string) (served bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.definitionLocked(kind); ok {
		return true
	}
	if t.waiting[kind] == nil {
		t.waiting[kind] = map[string]bool{}
	}
	t.waiting[kind][work] = true
	return false
}

// forget drops a work from every wait, once it is gone.
func (t *crdTracker) forget(work string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for kind, works := range t.waiting {
		delete(works, work)
		if len(works) == 0 {
			delete(t.waiting, kind)
		}
	}
}

// refreshAfterMiss resets the mapper after it did not know a kind, unless it was reset a moment ago.
func (t *crdTracker) refreshAfterMiss() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if time.Since(t.lastReset) >= minMapperReset {
		t.resetLocked()
	}
}

// mappingState is how a manifest's kind stands on the spoke.
type mappingState int

const (
	kindServed  mappingState = iota // mapped; the mapping is authoritative
	kindPending                     // a CRD defines it but the spoke does not serve it yet: wait for it
	kindUnknown                     // nothing serves it
)

// resolveMapping maps a kind to its resource on the spoke, authoritatively: a mapper that does not know
// the kind re-reads discovery before the kind is called unknown, and a mapping that disagrees with the
// spoke's CRD of the kind (one deleted and re-created with another scope or versions) is read again.
// Only a served kind's mapping may choose a strategy or a watch, or be written to.
func (c *controller) resolveMapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, mappingState, error) {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) || (err == nil && !c.crds.agrees(m)) {
		c.crds.refreshAfterMiss()
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	switch {
	case err == nil && c.crds.agrees(m):
		return m, kindServed, nil
	case err == nil:
		return nil, kindPending, nil // discovery has not caught up with the CRD yet
	case !meta.IsNoMatchError(err):
		return nil, kindUnknown, fmt.Errorf("map %s to a resource: %w", gvk, err)
	}
	if s, ok := c.crds.definition(gvk.GroupKind()); ok && slices.Contains(s.versions, gvk.Version) {
		return nil, kindPending, nil // Established, but not in discovery yet
	}
	return nil, kindUnknown, nil
}

// agrees reports whether a mapping matches the spoke's CRD of its kind; kinds no CRD defines (built-in
// and aggregated ones) are taken as the mapper says.
func (t *crdTracker) agrees(m *meta.RESTMapping) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	var found bool
	for _, s := range t.byName {
		if s.kind != m.GroupVersionKind.GroupKind() {
			continue
		}
		found = true
		if s.established && s.namespaced == (m.Scope.Name() == meta.RESTScopeNameNamespace) && slices.Contains(s.versions, m.GroupVersionKind.Version) {
			return true
		}
	}
	return !found
}
