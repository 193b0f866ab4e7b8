package hub

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// slimWork is the cache transform of ManifestWorks: the hub caches every work of its fleet (a hundred
// thousand for ten thousand clusters) and keeps of each only what it reads from the cache.
//
//   - its metadata, which deliver compares (labels, the spec hash) and an Update sends back, without
//     managedFields (an Update without them keeps the stored ones);
//   - its spec's manifestConfigs, not its manifests: deliver knows from the spec hash whether a work is
//     up to date, writes a whole new spec when it is not, and reads the stored work when it needs the
//     manifests (the earlier revisions a rollout keeps);
//   - of its status, what clusterStatus reads: each condition's type, status and generation, the
//     messages a listed cluster shows (Applied when not True, Progressing or Degraded when True), the
//     manifests' identities and their feedback.
//
// A work the hub writes is decoded from the API server's answer, not from the cache, so what it writes
// is whole.
func slimWork(obj any) (any, error) {
	mw, ok := obj.(*workv1.ManifestWork)
	if !ok {
		return obj, nil // a deletion tombstone: passed on as it is
	}
	mw.ManagedFields = nil
	mw.Spec.Workload.Manifests = nil
	slimConditions(mw.Status.Conditions, nil)
	for i := range mw.Status.ResourceStatus.Manifests {
		slimConditions(mw.Status.ResourceStatus.Manifests[i].Conditions, shownMessage)
	}
	return mw, nil
}

// slimConditions drops the reason, transition time and (unless keep says otherwise) message of each
// condition.
func slimConditions(conds []metav1.Condition, keep func(metav1.Condition) bool) {
	for i := range conds {
		c := &conds[i]
		c.Reason, c.LastTransitionTime = "", metav1.Time{}
		if keep == nil || !keep(*c) {
			c.Message = ""
		}
	}
}

// shownMessage reports whether the AppConfig's status may show this manifest condition's message (see
// clusterStatus): why a manifest is not applied, progressing or degraded.
func shownMessage(c metav1.Condition) bool {
	switch c.Type {
	case workv1.ManifestApplied:
		return c.Status != metav1.ConditionTrue
	case workv1.ManifestProgressing, workv1.ManifestDegraded:
		return c.Status == metav1.ConditionTrue
	}
	return false
}
