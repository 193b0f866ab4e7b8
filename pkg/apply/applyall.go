package apply

import (
	"context"
	"sort"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ApplyAll calls applyOne once for each object of objs, in the order a cluster needs them: Namespaces
// one at a time first, then CustomResourceDefinitions one at a time (the objects in a namespace, and
// the custom resources of a CRD, then find what they need), then everything else at once, at most
// parallelism at a time, so that the time of many objects is that of the slowest rather than the sum.
// A nil entry (an object that could not be decoded) goes with the rest. applyOne gets the object's
// index in objs and keeps its outcome by that index: one failing object never stops the others. ApplyAll
// returns when every call has returned.
func ApplyAll(ctx context.Context, objs []*unstructured.Unstructured, parallelism int, applyOne func(ctx context.Context, i int)) {
	order := make([]int, len(objs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return applyRank(objs[order[a]]) < applyRank(objs[order[b]]) })
	var rest []int
	for _, i := range order {
		if applyRank(objs[i]) < rankRest {
			applyOne(ctx, i)
		} else {
			rest = append(rest, i)
		}
	}
	var g errgroup.Group
	g.SetLimit(max(parallelism, 1))
	for _, i := range rest {
		g.Go(func() error {
			applyOne(ctx, i)
			return nil
		})
	}
	_ = g.Wait()
}

const (
	rankNamespace = iota
	rankCRD
	rankRest
)

var (
	namespaceGK = schema.GroupKind{Kind: "Namespace"}
	crdGK       = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
)

func applyRank(obj *unstructured.Unstructured) int {
	if obj == nil {
		return rankRest
	}
	switch obj.GroupVersionKind().GroupKind() {
	case namespaceGK:
		return rankNamespace
	case crdGK:
		return rankCRD
	}
	return rankRest
}
