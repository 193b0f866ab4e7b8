package agent

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// The copy a write returned is kept as the cache keeps a work (no managedFields), and only until the
// informer holds a version it does not supersede — not until the work's next reconcile.
func TestWriteThroughCacheKeepsAWrittenCopyUntilTheCacheCatchesUp(t *testing.T) {
	at := func(rv string) *workv1.ManifestWork {
		return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "cluster1", ResourceVersion: rv,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "ferry-agent", Operation: metav1.ManagedFieldsOperationUpdate}}}}
	}
	f := newWriteThroughCache[*workv1.ManifestWork]()
	f.wrote("1", at("2"))
	if got := f.pick(at("1")); got.ResourceVersion != "2" || got.ManagedFields != nil {
		t.Fatalf("a stale cached copy gave version %s with managedFields %v, want the written version 2 without", got.ResourceVersion, got.ManagedFields)
	}
	f.caughtUp(at("1")) // an event of the version the write superseded: the cache is still behind
	if got := f.pick(at("1")); got.ResourceVersion != "2" {
		t.Fatalf("after an event of the superseded version, the stale cached copy gave version %s, want 2", got.ResourceVersion)
	}
	f.caughtUp(at("2"))
	if _, kept := f.m["w"]; kept {
		t.Error("the written copy is still kept after the informer caught up with it")
	}
}
