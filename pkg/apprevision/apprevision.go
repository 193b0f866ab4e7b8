package apprevision

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/override"
)

// LabelHash, on an application revision, is its hash: the spec hash of its works without overrides,
// else the hash of that and the overrides (v1alpha2.WorkRevision on each work).
const LabelHash = "ferry.io/app-spec-hash"

// Data is what an application revision holds.
type Data struct {
	// Spec of the ManifestWork of every cluster, before overrides.
	Spec workv1.ManifestWorkSpec `json:"spec"`
	// RevisionEnabled names, for each component with a revision-enabled trait, the component revision
	// rendered: the workloads of its earlier revisions stay in the works beside it.
	RevisionEnabled map[string]string `json:"revisionEnabled,omitempty"`
	// Overrides of the AppConfig, and the hash of Spec they apply to, when it has overrides.
	// Overrides of the AppConfig as the revision records them (their traits rendered), and the hash of
	// Spec they apply to, when it has overrides.
	Overrides []v1alpha2.Override `json:"overrides,omitempty"`
	SpecHash  string              `json:"specHash,omitempty"`
	// Components is what overrides of components need of the revision's components.
	Components *override.Components `json:"components,omitempty"`
}

// Decode reads what rev holds.
func Decode(rev *appsv1.ControllerRevision) (*Data, error) {
	data := &Data{}
	if err := json.Unmarshal(rev.Data.Raw, data); err != nil {
		return nil, fmt.Errorf("decode application revision %s: %w", rev.Name, err)
	}
	return data, nil
}
