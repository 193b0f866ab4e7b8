package workload

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"
)

// Manifest is one entry of spec.workload.manifests, decoded.
type Manifest struct {
	Ordinal int32
	Object  *unstructured.Unstructured // nil when DecodeErr is set
	// DecodeErr says why the raw manifest is not an object.
	DecodeErr error
}

// Decode decodes every manifest of a work. A manifest that does not decode is kept, with its error, so
// that it gets a status entry of its own while the others apply.
func Decode(work *workv1.ManifestWork) []Manifest {
	out := make([]Manifest, 0, len(work.Spec.Workload.Manifests))
	for i, m := range work.Spec.Workload.Manifests {
		entry := Manifest{Ordinal: int32(i)}
		raw := m.Raw
		if len(raw) == 0 && m.Object != nil {
			var err error
			if raw, err = json.Marshal(m.Object); err != nil {
				entry.DecodeErr = fmt.Errorf("encode manifest: %w", err)
				out = append(out, entry)
				continue
			}
		}
		obj := &unstructured.Unstructured{}
		if err := decodeObject(raw, &obj.Object); err != nil {
			entry.DecodeErr = fmt.Errorf("the manifest is not a JSON or YAML object: %w", err)
		} else if obj.Object == nil {
			entry.DecodeErr = fmt.Errorf("the manifest is empty")
		} else {
			entry.Object = obj
		}
		out = append(out, entry)
	}
	return out
}

// decodeObject decodes a manifest into out. The API server hands every manifest over as JSON, which is
// decoded as JSON: the same values a YAML decoding gives (YAML's decoder converts to JSON and decodes
// that), at a fraction of the cost — the agent decodes every manifest of a work on each pass, and going
// through YAML made that most of an idle agent's garbage. What is not JSON (a YAML manifest written by
// hand for a client that sends it raw) is read as YAML, as before.
func decodeObject(raw []byte, out *map[string]any) error {
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && trimmed[0] == '{' {
		if err := json.Unmarshal(trimmed, out); err == nil {
			return nil
		}
		*out = nil
	}
	return yaml.Unmarshal(raw, out)
}
