package statusview

import (
	"cmp"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// StatusOnlyNote is what a StatusOnly view of an AppConfig says of itself under its table.
const StatusOnlyNote = "Read from the AppConfig's status alone: per-manifest detail of every cluster needs read access to " +
	"ManifestWorks (work.open-cluster-management.io) in the cluster namespaces."

// ForAppConfigStatus is the view of an AppConfig from its status alone, for a user who may not read
// the ManifestWorks delivering it (they live in the cluster namespaces; a tenant may read only her own
// namespace). It has the counts of status.summary; the clusters of status.placement (the first
// MaxClustersListed by name; MoreClusters counts the rest) and of status.clusters, the clusters that
// are not fine, with the manifests the status lists for them as it gives them (no strategy, no
// reason); a cluster the status does not list as not fine is fine, unless the status left some out
// (status.omittedClusters): then nothing is known of it.
//
// Healthy is the hub's verdict: Ready for the current generation, and status.summary counting every
// one of its clusters (at least one) applied, available and healthy.
func ForAppConfigStatus(app *v1alpha2.ApplicationConfiguration) AppConfig {
	a := AppConfig{Namespace: app.Namespace, Name: app.Name, Clusters: []Work{}, StatusOnly: true}
	a.Ready, a.ReadyMessage = readyOf(app)
	a.NotBound = notBoundOf(app)
	a.Drift = app.Status.Drift.DeepCopy()
	s := &app.Status
	a.OmittedClusters = s.OmittedClusters
	var n int32
	if s.Summary != nil {
		summary := *s.Summary
		a.Summary, n = &summary, summary.Clusters
	}

	notFine := map[string]*v1alpha2.ClusterStatus{}
	var names []string
	for i := range s.Clusters {
		notFine[s.Clusters[i].Name] = &s.Clusters[i]
		names = append(names, s.Clusters[i].Name)
	}
	if s.Placement != nil {
		names = append(names, s.Placement.Clusters...)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	workName := v1alpha2.ManifestWorkName(app.Namespace, app.Name)
	for _, name := range names {
		cs, listed := notFine[name]
		var w Work
		switch {
		case listed:
			w = statusWork(cs, workName)
		case s.OmittedClusters > 0:
			w = Work{Cluster: name, Name: workName, Applied: metav1.ConditionUnknown, Available: metav1.ConditionUnknown,
				Health: v1alpha2.HealthUnknown, Manifests: []Manifest{}, unlisted: true}
		default:
			w = Work{Cluster: name, Name: workName, Applied: metav1.ConditionTrue, Available: metav1.ConditionTrue,
				Health: v1alpha2.Healthy, Healthy: true, Manifests: []Manifest{}}
		}
		a.Clusters = append(a.Clusters, w)
	}
	a.MoreClusters = max(0, n-int32(len(a.Clusters)))

	if a.Ready == metav1.ConditionTrue && a.Summary != nil && n > 0 {
		all := fmt.Sprintf("%d/%d", n, n)
		a.Healthy = a.Summary.Applied == all && a.Summary.Available == all && a.Summary.Healthy == all &&
			len(s.Clusters) == 0 && s.OmittedClusters == 0
	}
	return a
}

// statusWork is the view of a cluster the AppConfig's status lists as not fine.
func statusWork(cs *v1alpha2.ClusterStatus, workName string) Work {
	w := Work{
		Cluster:          cs.Name,
		Name:             cmp.Or(cs.ManifestWork, workName),
		Applied:          cmp.Or(cs.Applied, metav1.ConditionUnknown),
		Available:        cmp.Or(cs.Available, metav1.ConditionUnknown),
		Health:           cmp.Or(cs.Health, v1alpha2.HealthUnknown),
		Healthy:          cs.Fine(),
		Manifests:        []Manifest{},
		OmittedManifests: cs.OmittedManifests,
	}
	for _, ms := range cs.Manifests {
		m := Manifest{Ordinal: ms.Ordinal, Kind: ms.Kind, Namespace: ms.Namespace, Name: ms.Name,
			Applied:   cmp.Or(ms.Applied, metav1.ConditionUnknown),
			Available: cmp.Or(ms.Available, metav1.ConditionUnknown),
			Health:    cmp.Or(ms.Health, v1alpha2.HealthUnknown),
			Message:   ms.Message,
			Feedback:  slices.Clone(ms.Feedback),
		}
		if gv, err := schema.ParseGroupVersion(ms.APIVersion); err == nil {
			m.Group, m.Version = gv.Group, gv.Version
		}
		w.Manifests = append(w.Manifests, m)
	}
	return w
}
