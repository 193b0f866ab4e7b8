package statusview

import (
	"cmp"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// fine says whether a manifest is what a person or script waits for: applied, present and healthy. It
// is the hub's reading (v1alpha2.Fine), so the status view and `kubectl get appconfig` never disagree.
func (m Manifest) fine() bool {
	return v1alpha2.Fine(m.Applied, m.Available, m.Health)
}

// problem describes, in one line, why a manifest is not fine.
func (m Manifest) problem() string {
	what := fmt.Sprintf("%s %s", m.Kind, namespacedName(m.Namespace, m.Name))
	why := fmt.Sprintf("applied %s, available %s, health %s", m.Applied, m.Available, m.Health)
	if m.Reason != "" {
		why += ": " + reasonMessage(m.Reason, m.Message)
	}
	return what + " (" + why + ")"
}

// Problems lists, one line each, why the work is not Healthy; none when it is.
func (w Work) Problems() []string {
	var out []string
	for _, m := range w.Manifests {
		if !m.EarlierRevision && !m.fine() {
			out = append(out, w.Cluster+": "+m.problem())
		}
	}
	if len(out) == 0 && !w.Healthy {
		out = append(out, w.Cluster+": none of the work's manifests is of the AppConfig's current revision")
	}
	return out
}

// Problems lists, one line each, why the AppConfig is not Healthy; none when it is.
func (a AppConfig) Problems() []string {
	var out []string
	if a.Ready != metav1.ConditionTrue {
		out = append(out, fmt.Sprintf("ApplicationConfiguration %s/%s is not Ready (%s): %s", a.Namespace, a.Name, a.Ready, a.ReadyMessage))
	}
	if a.StatusOnly {
		return a.statusProblems(out)
	}
	if len(a.Clusters) == 0 {
		out = append(out, fmt.Sprintf("ApplicationConfiguration %s/%s is delivered to no cluster", a.Namespace, a.Name))
	}
	for _, w := range a.Clusters {
		out = append(out, w.Problems()...)
	}
	return out
}

// statusProblems completes the problems of a StatusOnly view, out, with what its status says is not
// fine.
func (a AppConfig) statusProblems(out []string) []string {
	if a.Summary == nil || a.Summary.Clusters == 0 {
		out = append(out, fmt.Sprintf("ApplicationConfiguration %s/%s is delivered to no cluster", a.Namespace, a.Name))
	}
	for _, w := range a.Clusters {
		if w.Healthy || w.unlisted {
			continue
		}
		var manifests []string
		for _, m := range w.Manifests {
			if !m.fine() {
				manifests = append(manifests, w.Cluster+": "+m.problem())
			}
		}
		if w.OmittedManifests > 0 {
			manifests = append(manifests, fmt.Sprintf("%s: and %d more manifests that are not fine", w.Cluster, w.OmittedManifests))
		}
		if len(manifests) == 0 {
			manifests = append(manifests, fmt.Sprintf("%s: applied %s, available %s, health %s", w.Cluster, w.Applied, w.Available, w.Health))
		}
		out = append(out, manifests...)
	}
	if a.OmittedClusters > 0 {
		out = append(out, fmt.Sprintf("and %d more clusters that are not fine, which the AppConfig's status does not list", a.OmittedClusters))
	}
	if len(out) == 0 && !a.Healthy {
		// The counts say what no listed cluster does, e.g. a status the hub is about to write again.
		s := a.Summary
		out = append(out, fmt.Sprintf("the hub counts %s applied, %s available and %s healthy of %d clusters",
			s.Applied, s.Available, cmp.Or(s.Healthy, "?"), s.Clusters))
	}
	return out
}
