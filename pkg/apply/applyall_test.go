package apply_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-mc/ferry/pkg/apply"
)

func object(apiVersion, kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	return u
}

// Namespaces are applied first and CustomResourceDefinitions next, one at a time and each group in
// the given order; everything else (an undecodable nil entry too) only after them, at most parallelism
// at a time; every object exactly once.
func TestApplyAllAppliesNamespacesThenCRDsThenTheRestBounded(t *testing.T) {
	objs := []*unstructured.Unstructured{
		object("v1", "ConfigMap", "a"),
		object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.com"),
		object("v1", "Namespace", "n"),
		nil,
		object("v1", "Secret", "s"),
		object("v1", "Namespace", "m"),
		object("example.com/v1", "Widget", "w"),
		object("v1", "ConfigMap", "b"),
	}
	const parallelism = 2
	var (
		mu               sync.Mutex
		started          []int
		running, maxSeen atomic.Int32
		firstDone        = map[int]bool{}
	)
	apply.ApplyAll(context.Background(), objs, parallelism, func(_ context.Context, i int) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := maxSeen.Load(); n > m && !maxSeen.CompareAndSwap(m, n); m = maxSeen.Load() {
		}
		mu.Lock()
		started = append(started, i)
		if i == 1 || i == 2 || i == 5 {
			firstDone[i] = true
		} else if len(firstDone) != 3 {
			t.Errorf("object %d started before every Namespace and CRD was applied (%v)", i, firstDone)
		}
		mu.Unlock()
	})
	if got, want := started[:3], []int{2, 5, 1}; !slices.Equal(got, want) {
		t.Errorf("applied first %v, want the Namespaces in order, then the CRD: %v", got, want)
	}
	all := slices.Clone(started)
	slices.Sort(all)
	if !slices.Equal(all, []int{0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Errorf("applied %v, want every object once", started)
	}
	if maxSeen.Load() > parallelism {
		t.Errorf("%d objects applied at once, want at most %d", maxSeen.Load(), parallelism)
	}
}
