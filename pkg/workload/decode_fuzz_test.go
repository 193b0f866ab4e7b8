package workload

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
)

// A hub can hand the agent any bytes as a manifest. Whatever they are, decoding does not panic, every
// manifest keeps its ordinal and gets either an object or an error saying why not, an object goes
// through what the apply engine does first with it (Normalize's checks, Hash) without panicking, and a
// good manifest beside bad ones still decodes. Seeds: testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`), []byte("kind: Namespace\nmetadata: {name: n}\n"))
	const good = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"good","namespace":"n"}}`
	f.Fuzz(func(t *testing.T, first, second []byte) {
		work := &workv1.ManifestWork{}
		for _, raw := range [][]byte{first, []byte(good), second} {
			work.Spec.Workload.Manifests = append(work.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
		}
		ms := Decode(work)
		if len(ms) != 3 {
			t.Fatalf("decoded %d manifests of 3", len(ms))
		}
		for i, m := range ms {
			if m.Ordinal != int32(i) {
				t.Errorf("manifest %d decoded with ordinal %d", i, m.Ordinal)
			}
			switch {
			case (m.Object == nil) == (m.DecodeErr == nil):
				t.Fatalf("manifest %d: object %v and error %v; want exactly one", i, m.Object, m.DecodeErr)
			case m.DecodeErr != nil && m.DecodeErr.Error() == "":
				t.Errorf("manifest %d: an error that says nothing", i)
			case m.Object != nil && m.Object.Object == nil:
				t.Errorf("manifest %d: an object without content", i)
			case m.Object != nil:
				// What the apply engine does first with it: check and copy it, and hash the copy.
				if out, err := Normalize(m.Object); err == nil {
					_ = Hash(out)
				}
				_ = Hash(m.Object)
			}
		}
		if ms[1].Object == nil || ms[1].Object.GetName() != "good" {
			t.Errorf("the good manifest between two others did not decode: %v", ms[1].DecodeErr)
		}
	})
}
