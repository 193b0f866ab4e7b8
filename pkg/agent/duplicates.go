package agent

import (
	"fmt"

	"github.com/ferry-mc/ferry/pkg/apply"
	"github.com/ferry-mc/ferry/pkg/workload"
)

// rejectConflictingDuplicates marks every manifest that names the same object (group, kind, namespace,
// name) as an earlier manifest of the work but with other content: applying both would overwrite the
// object twice in every round, each write waking the work up again through the watch of its objects,
// for ever. The earlier manifest applies; the later one fails alone, saying which manifest it clashes
// with. Identical copies are left alone: they apply as one.
func rejectConflictingDuplicates(ms []workload.Manifest) []workload.Manifest {
	type objectID struct{ group, kind, namespace, name string }
	type first struct {
		ordinal int32
		hash    string
	}
	seen := map[objectID]first{}
	for i := range ms {
		m := &ms[i]
		if m.Object == nil {
			continue
		}
		hash, err := apply.RecordHash(m.Object, true)
		if err != nil {
			continue // Apply reports what is wrong with it
		}
		gvk := m.Object.GroupVersionKind()
		id := objectID{gvk.Group, gvk.Kind, m.Object.GetNamespace(), m.Object.GetName()}
		earlier, dup := seen[id]
		switch {
		case !dup:
			seen[id] = first{ordinal: m.Ordinal, hash: hash}
		case earlier.hash != hash:
			m.DecodeErr = fmt.Errorf("it names %s, as manifest %d does, with other content; a work may hold one manifest per object: remove or merge one of them",
				describeObject(gvk.Kind, m.Object.GetNamespace(), m.Object.GetName()), earlier.ordinal)
		}
	}
	return ms
}
