package v1alpha2

import (
	"encoding/json"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	workv1 "open-cluster-management.io/api/work/v1"
)

// CurrentObjects are the kind/name of the workloads and traits an AppConfig renders now: the objects
// whose reports count towards its clusters' Applied, Available and health (a rollout's earlier
// revisions do not). The hub's status and `kubectl ferry` both use it.
func CurrentObjects(workloads []WorkloadStatus) map[string]bool {
	out := map[string]bool{}
	for _, w := range workloads {
		out[w.Reference.Kind+"/"+w.Reference.Name] = true
		for _, t := range w.Traits {
			out[t.Reference.Kind+"/"+t.Reference.Name] = true
		}
	}
	return out
}

// FeedbackValueOf is an agent's status feedback value as text, the way a person reads it.
func FeedbackValueOf(v workv1.FeedbackValue) FeedbackValue {
	out := FeedbackValue{Name: v.Name}
	switch f := v.Value; {
	case f.Integer != nil:
		out.Value = strconv.FormatInt(*f.Integer, 10)
	case f.String != nil:
		out.Value = *f.String
	case f.Boolean != nil:
		out.Value = strconv.FormatBool(*f.Boolean)
	case f.JsonRaw != nil:
		out.Value = *f.JsonRaw
	}
	return out
}

// IdentifyManifest reads what object a manifest of a work is from its content, its resource guessed
// from its kind as the hub does for a kind it cannot map (an agent's report names the real one). The
// ordinal is left for the caller, which knows it.
func IdentifyManifest(manifest workv1.Manifest) (workv1.ManifestResourceMeta, error) {
	raw := manifest.Raw
	if raw == nil && manifest.Object != nil {
		var err error
		if raw, err = json.Marshal(manifest.Object); err != nil {
			return workv1.ManifestResourceMeta{}, fmt.Errorf("encode manifest: %w", err)
		}
	}
	var obj struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return workv1.ManifestResourceMeta{}, fmt.Errorf("decode manifest: %w", err)
	}
	gv, err := schema.ParseGroupVersion(obj.APIVersion)
	if err != nil {
		return workv1.ManifestResourceMeta{}, fmt.Errorf("decode manifest: %w", err)
	}
	gvk := gv.WithKind(obj.Kind)
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return workv1.ManifestResourceMeta{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Resource: plural.Resource,
		Name: obj.Metadata.Name, Namespace: obj.Metadata.Namespace}, nil
}
