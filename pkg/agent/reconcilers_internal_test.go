package agent

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	worklisters "open-cluster-management.io/api/client/work/listers/work/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apply"
)

// A pass's reconcilers run in an order that matters: a work being deleted is finalized before
// anything else looks at it, also when it had completed (a completed work is otherwise held as it is),
// and nothing is applied before the finalizer and the AppliedManifestWork are there; the status is
// reported after the apply, and the next pass is scheduled last.
func TestReconcilersRunInTheOrderTheirDependenciesNeed(t *testing.T) {
	var names []string
	for _, r := range (&controller{}).reconcilers() {
		names = append(names, r.name)
	}
	before := func(a, b string) {
		t.Helper()
		i, j := slices.Index(names, a), slices.Index(names, b)
		if i < 0 || j < 0 || i >= j {
			t.Errorf("reconcilers %q: want %q before %q", names, a, b)
		}
	}
	before("read", "finalize")
	before("finalize", "completed")
	before("completed", "prepare")
	before("prepare", "apply")
	before("apply", "report")
	if names[len(names)-1] != "schedule" {
		t.Errorf("reconcilers %q: want schedule last", names)
	}
}

// A work gone from the hub ends the pass and takes with it what the agent kept for it; a work that is
// there is handed on.
func TestReadWorkForgetsAWorkThatIsGone(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	here := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "here", Generation: 2}}
	if err := indexer.Add(here); err != nil {
		t.Fatal(err)
	}
	c := &controller{
		cluster:    "c1",
		workLister: worklisters.NewManifestWorkLister(indexer).ManifestWorks("c1"),
		freshWorks: newWriteThroughCache[*workv1.ManifestWork](),
		freshAMWs:  newWriteThroughCache[*workv1.AppliedManifestWork](),
		settled:    newUnchangedApplyCache(),
		crds:       &crdTracker{waiting: map[schema.GroupKind]map[string]bool{{Kind: "Widget"}: {"gone": true}}},
	}
	kept := &manifestResult{result: apply.Result{Operation: apply.Unchanged}}
	c.settled.record("gone", settledKey{generation: 1}, kept)

	p := &reconcileState{name: "gone"}
	if done, err := c.readWork(context.Background(), p); !done || err != nil {
		t.Fatalf("a work that is gone: done %t, error %v; want the pass ended without error", done, err)
	}
	if _, ok := c.settled.lookup("gone", 0, settledKey{generation: 1}, nil); ok {
		t.Error("the settled applies of a work that is gone were kept")
	}
	if len(c.crds.waiting) != 0 {
		t.Errorf("a work that is gone still waits for a CRD: %v", c.crds.waiting)
	}

	p = &reconcileState{name: "here"}
	if done, err := c.readWork(context.Background(), p); done || err != nil || p.work == nil || p.work.Generation != 2 {
		t.Errorf("a work that is there: done %t, error %v, work %v; want it handed on", done, err, p.work)
	}
}

// A completed work keeps its finalizer and is held as it is; one that has not completed, or completed
// without the agent's finalizer (it has not taken it in yet), goes on.
func TestHoldCompletedHoldsOnlyACompletedWorkOfTheAgent(t *testing.T) {
	complete := []metav1.Condition{{Type: workv1.WorkComplete, Status: metav1.ConditionTrue}}
	for name, tc := range map[string]struct {
		conditions []metav1.Condition
		finalizers []string
		held       bool
	}{
		"completed":                      {complete, []string{workv1.ManifestWorkFinalizer}, true},
		"not completed":                  {nil, []string{workv1.ManifestWorkFinalizer}, false},
		"completed, finalizer not there": {complete, nil, false},
	} {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Finalizers: tc.finalizers}, Status: workv1.ManifestWorkStatus{Conditions: tc.conditions}}
		if held, _ := holdCompleted(context.Background(), &reconcileState{work: w}); held != tc.held {
			t.Errorf("%s: held %t, want %t", name, held, tc.held)
		}
	}
}

// When a pass looks at its work again with nothing changed: as the apply asked, sooner while removed
// objects are being deleted, at the resync period otherwise; a retry is left to the queue's backoff.
func TestNextPassAfter(t *testing.T) {
	const resync = 10 * time.Second
	for name, tc := range map[string]struct {
		next     nextStep
		removing bool
		want     nextStep
	}{
		"nothing asked":                   {nextStep{}, false, nextStep{after: resync}},
		"asked for sooner":                {nextStep{after: 2 * time.Second}, false, nextStep{after: 2 * time.Second}},
		"removing":                        {nextStep{}, true, nextStep{after: removalCheck}},
		"removing, asked for even sooner": {nextStep{after: removalCheck / 2}, true, nextStep{after: removalCheck / 2}},
		"removing, asked for later":       {nextStep{after: time.Minute}, true, nextStep{after: removalCheck}},
		"retry":                           {nextStep{retry: true}, true, nextStep{retry: true}},
	} {
		if got := nextPassAfter(tc.next, tc.removing, resync); got != tc.want {
			t.Errorf("%s: %+v, want %+v", name, got, tc.want)
		}
	}
}
