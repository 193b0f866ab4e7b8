package fleetsim

import (
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// Work is what a simulated agent needs to know of a ManifestWork to report on it: which generation
// to report on and what each manifest of its spec is. It is a few hundred bytes where the work is
// kilobytes, so that 100,000 of them fit in a benchmark's memory.
type Work struct {
	// ObjectMeta keeps the work's name, namespace (its cluster), generation, labels and
	// resourceVersion; nothing else.
	metav1.ObjectMeta
	// Manifests are the work's manifests in the order of spec.workload.manifests.
	Manifests []Manifest
	// Revision is the hash of the revision of the application the work carries (v1alpha2.WorkRevision).
	Revision string
	// ReportedGeneration is the generation the agent's last report is about (its Applied condition's
	// observedGeneration; 0 before any): the work is reported on when it is Generation.
	ReportedGeneration int64
	// Seen is when this generation of the work was first seen (by a WorkTracker; zero otherwise).
	Seen time.Time
	// Written is when the API server last recorded a write of the work's spec or metadata (the newest
	// of its managedFields entries but the status's; whole seconds): when the hub wrote it, however
	// late a watcher sees it.
	Written time.Time
}

// Manifest is one manifest of a work as its agent reports it.
type Manifest struct {
	// Meta identifies the manifest in the work's status: its ordinal and what object it is.
	Meta workv1.ManifestResourceMeta
	// Feedback: the work's manifestConfigs ask for WellKnownStatus feedback of this object (the hub
	// asks it for every workload).
	Feedback bool
	// Replicas is the object's spec.replicas (1 when it has none): what a ready Deployment reports.
	Replicas int64
}

// Key is the work's namespace/name.
func (w *Work) Key() string { return w.Namespace + "/" + w.Name }

// WorkOf is the slim view of mw. A manifest that cannot be decoded is an error: the hub never writes
// one, and a simulated agent could not say what it is.
func WorkOf(mw *workv1.ManifestWork) (*Work, error) {
	w := &Work{ObjectMeta: metav1.ObjectMeta{
		Name: mw.Name, Namespace: mw.Namespace, Generation: mw.Generation, Labels: mw.Labels,
		ResourceVersion: mw.ResourceVersion, UID: mw.UID,
	}, Written: writtenAt(mw), Revision: v1alpha2.WorkRevision(mw.Annotations),
		ReportedGeneration: workreport.ReportedGeneration(mw.Status.Conditions)}
	for i, raw := range mw.Spec.Workload.Manifests {
		id, err := workreport.IdentifyManifest(raw)
		if err != nil {
			return nil, fmt.Errorf("ManifestWork %s/%s: manifest %d: %w", mw.Namespace, mw.Name, i, err)
		}
		id.Ordinal = int32(i)
		var replicas struct {
			Spec struct {
				Replicas *int64 `json:"replicas"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(raw.Raw, &replicas); err != nil {
			return nil, fmt.Errorf("ManifestWork %s/%s: manifest %d: %w", mw.Namespace, mw.Name, i, err)
		}
		m := Manifest{Meta: id, Replicas: 1}
		if r := replicas.Spec.Replicas; r != nil {
			m.Replicas = *r
		}
		if cfg := configOf(mw.Spec.ManifestConfigs, m.Meta); cfg != nil {
			// The hub named the resource from its REST mapper, as an agent's would map it.
			m.Meta.Resource = cfg.ResourceIdentifier.Resource
			for _, rule := range cfg.FeedbackRules {
				m.Feedback = m.Feedback || rule.Type == workv1.WellKnownStatusType
			}
		}
		w.Manifests = append(w.Manifests, m)
	}
	return w, nil
}

// configOf is the manifest config of the object m names: the one of its group, namespace and name,
// and of the resource guessed from its kind when several are (two kinds of one group may share a name).
func configOf(configs []workv1.ManifestConfigOption, m workv1.ManifestResourceMeta) *workv1.ManifestConfigOption {
	var found *workv1.ManifestConfigOption
	for i := range configs {
		id := configs[i].ResourceIdentifier
		if id.Group != m.Group || id.Namespace != m.Namespace || id.Name != m.Name {
			continue
		}
		if id.Resource == m.Resource {
			return &configs[i]
		}
		if found == nil {
			found = &configs[i]
		}
	}
	return found
}

// writtenAt is when mw's spec or metadata was last written, by its managedFields; its creation when it
// has none.
func writtenAt(mw *workv1.ManifestWork) time.Time {
	at := mw.CreationTimestamp.Time
	for _, f := range mw.ManagedFields {
		if f.Subresource == "" && f.Time != nil && f.Time.After(at) {
			at = f.Time.Time
		}
	}
	return at
}
