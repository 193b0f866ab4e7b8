package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// Fine: the manifest is applied, present and healthy.
func (m ManifestStatus) Fine() bool { return Fine(m.Applied, m.Available, m.Health) }

// Fine: the cluster's current objects are all applied, present and healthy.
func (cs ClusterStatus) Fine() bool { return Fine(cs.Applied, cs.Available, cs.Health) }

// Fine is what a person or a script waits for of an object, or of all of a cluster's: applied (True),
// present (Available True) and Healthy. Unknown is not fine: an unreported object may not be there.
// Package workreport reads these three verdicts from an agent's report.
func Fine(applied, available metav1.ConditionStatus, health Health) bool {
	return applied == metav1.ConditionTrue && available == metav1.ConditionTrue && health == Healthy
}
