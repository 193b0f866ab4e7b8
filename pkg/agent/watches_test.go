package agent

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	metadatafake "k8s.io/client-go/metadata/fake"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apply"
)

// A watch lives as long as some work holds an object in its scope, and no longer.
func TestWatchesFollowTheObjectsWorksHold(t *testing.T) {
	// The client is never reached in a way that matters here: only the bookkeeping is under test.
	w := newObjectWatches(t.Context(), metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme()), func(string) {})
	cm := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secret := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	result := func(gvr schema.GroupVersionResource, ns, name string) manifestResult {
		return manifestResult{meta: workv1.ManifestResourceMeta{Namespace: ns, Name: name}, result: apply.Result{Resource: gvr, Namespaced: true}}
	}
	refs := func(gvr schema.GroupVersionResource, ns string) int {
		if sw := w.watching[watchScope{gvr: gvr, namespace: ns}]; sw != nil {
			return sw.refs
		}
		return -1 // not watched
	}

	w.track("a", []manifestResult{result(cm, "n", "x"), result(cm, "n", "y")})
	w.track("b", []manifestResult{result(cm, "n", "x")})
	if got := refs(cm, "n"); got != 3 {
		t.Fatalf("configmaps in n: %d references, want 3", got)
	}
	w.track("a", []manifestResult{result(cm, "n", "x"), result(cm, "n", "y")}) // a resync changes nothing
	if got := refs(cm, "n"); got != 3 {
		t.Fatalf("after a resync: %d references, want 3", got)
	}
	w.track("a", []manifestResult{result(secret, "n", "s")})
	if got, want := len(w.byObject[objectKey{gr: cm.GroupResource(), namespace: "n", name: "y"}]), 0; got != want {
		t.Errorf("works holding configmap y: %d, want %d", got, want)
	}
	if refs(cm, "n") != 1 || refs(secret, "n") != 1 {
		t.Fatalf("references: configmaps %d, secrets %d; want 1 and 1", refs(cm, "n"), refs(secret, "n"))
	}
	// What is kept of a work's objects, for as long as the work, holds no room for more.
	five := []manifestResult{result(secret, "n", "1"), result(secret, "n", "2"), result(secret, "n", "3"), result(secret, "n", "4"), result(secret, "n", "5")}
	w.track("c", five)
	if kept := w.byWork["c"]; len(kept) != 5 || cap(kept) != 5 {
		t.Errorf("a work's 5 objects kept in a list of length %d with room for %d", len(kept), cap(kept))
	}
	w.forget("c")
	w.forget("b")
	if refs(cm, "n") != -1 {
		t.Errorf("configmaps in n still watched with no work holding one")
	}
	w.forget("a")
	if len(w.watching) != 0 || len(w.byObject) != 0 || len(w.byWork) != 0 {
		t.Errorf("left after every work is forgotten: %d watches, %d objects, %d works", len(w.watching), len(w.byObject), len(w.byWork))
	}
}
