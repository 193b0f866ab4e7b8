package agent

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apply"
)

// A hub can hand the agent any bytes as a manifest. Whatever they are, decoding does not panic, every
// manifest keeps its ordinal and gets either an object (one the apply engine can copy and hash) or an
// error saying why not, and a good manifest beside bad ones still decodes. Seeds:
// testdata/fuzz/FuzzDecodeManifests.
func FuzzDecodeManifests(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`), []byte("kind: Namespace\nmetadata: {name: n}\n"))
	const good = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"good","namespace":"n"}}`
	f.Fuzz(func(t *testing.T, first, second []byte) {
		work := &workv1.ManifestWork{}
		for _, raw := range [][]byte{first, []byte(good), second} {
			work.Spec.Workload.Manifests = append(work.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
		}
		ms := decodeManifests(work)
		if len(ms) != 3 {
			t.Fatalf("decoded %d manifests of 3", len(ms))
		}
		for i, m := range ms {
			if m.ordinal != int32(i) {
				t.Errorf("manifest %d decoded with ordinal %d", i, m.ordinal)
			}
			switch {
			case (m.obj == nil) == (m.decodeErr == nil):
				t.Fatalf("manifest %d: object %v and error %v; want exactly one", i, m.obj, m.decodeErr)
			case m.decodeErr != nil && m.decodeErr.Error() == "":
				t.Errorf("manifest %d: an error that says nothing", i)
			case m.obj != nil && m.obj.Object == nil:
				t.Errorf("manifest %d: an object without content", i)
			case m.obj != nil:
				// What the apply engine does first with it: copy and encode it.
				if _, err := json.Marshal(m.obj.DeepCopy().Object); err != nil {
					t.Errorf("manifest %d decodes to an object that does not encode: %v", i, err)
				}
			}
		}
		if ms[1].obj == nil || ms[1].obj.GetName() != "good" {
			t.Errorf("the good manifest between two others did not decode: %v", ms[1].decodeErr)
		}
		objs := make([]*unstructured.Unstructured, len(ms))
		for i, m := range ms {
			objs[i] = m.obj
		}
		var mu sync.Mutex
		var order []int32
		apply.ApplyAll(context.Background(), objs, 2, func(_ context.Context, i int) {
			mu.Lock()
			order = append(order, ms[i].ordinal)
			mu.Unlock()
		})
		slices.Sort(order)
		if !slices.Equal(order, []int32{0, 1, 2}) {
			t.Errorf("applying them all applied ordinals %v, want each manifest once", order)
		}
	})
}
