package statusview

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// The verdicts below read a work's conditions exactly as the hub does when it folds a ManifestWork into
// its AppConfig's status (pkg/hub clusterStatus): the status view and `kubectl get appconfig` must never
// disagree about the same report.

// conditionStatus is the status of a work's condition typ, Unknown when missing or about an older
// generation than gen.
func conditionStatus(conds []metav1.Condition, typ string, gen int64) metav1.ConditionStatus {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil || c.ObservedGeneration != gen {
		return metav1.ConditionUnknown
	}
	return c.Status
}

// manifestCondition is a manifest's condition typ when it is about generation gen. Agents that do not
// record the generation (observedGeneration 0, as OCM's older agents) are taken at their word.
func manifestCondition(conds []metav1.Condition, typ string, gen int64) *metav1.Condition {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil || (c.ObservedGeneration != 0 && c.ObservedGeneration != gen) {
		return nil
	}
	return c
}

func statusOf(c *metav1.Condition) metav1.ConditionStatus {
	if c == nil {
		return metav1.ConditionUnknown
	}
	return c.Status
}

// fine says whether a manifest is what a person or script waits for: applied, present and healthy.
func (m Manifest) fine() bool {
	return m.Applied == metav1.ConditionTrue && m.Available == metav1.ConditionTrue && m.Health == v1alpha2.Healthy
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
	if len(a.Clusters) == 0 {
		out = append(out, fmt.Sprintf("ApplicationConfiguration %s/%s is delivered to no cluster", a.Namespace, a.Name))
	}
	for _, w := range a.Clusters {
		out = append(out, w.Problems()...)
	}
	return out
}
