package workreport

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	workv1 "open-cluster-management.io/api/work/v1"
)

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

// SameObject reports whether an agent's report of a manifest (its status's resourceMeta) is of the
// object id names: same group, kind, name and namespace — where a report without a namespace, of a
// resource the agent mapped, is of a cluster-scoped object whose manifest may name one (a hub that does
// not serve the kind could not know it was cluster-scoped; the agent's spoke does).
func SameObject(report, id workv1.ManifestResourceMeta) bool {
	return report.Group == id.Group && report.Kind == id.Kind && report.Name == id.Name &&
		(report.Namespace == id.Namespace || report.Namespace == "" && report.Resource != "")
}
