package agent

import (
	"slices"
	"unique"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	workv1 "open-cluster-management.io/api/work/v1"
)

// compactCached is the transform of the agent's informers of ManifestWorks and AppliedManifestWorks:
// what the caches keep of an object is what the agent reads, held once. (The watches of applied objects
// keep a watchedObject instead.) Per work the caches hold a ManifestWork and its AppliedManifestWork,
// which made most of the agent's memory per work:
//   - managedFields are kept in no cache. The agent never reads them from a cache (its server-side
//     applies are the API server's to merge), and they are often the largest part of an object's
//     metadata — of a ManifestWork a kilobyte.
//   - the strings every work repeats (its namespace and finalizer, its conditions' types, reasons and
//     messages, the kinds and versions of its manifests, the hub hash of its AppliedManifestWork) are
//     interned: one copy for the whole agent rather than one per work, per manifest.
//   - the lists of a work and of its AppliedManifestWork are copied to their length: the JSON decoder
//     grows a list by doubling, so a work of five manifests held room for eight, three times over.
var compactCached cache.TransformFunc = func(obj any) (any, error) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	switch o := obj.(type) {
	case *workv1.ManifestWork:
		compactObjectMeta(&o.ObjectMeta)
		o.Spec.Workload.Manifests = slices.Clone(o.Spec.Workload.Manifests)
		compactWorkStatus(&o.Status)
	case *workv1.AppliedManifestWork:
		compactObjectMeta(&o.ObjectMeta)
		o.Spec.HubHash, o.Spec.AgentID = intern(o.Spec.HubHash), intern(o.Spec.AgentID)
		o.Status.AppliedResources = compactAppliedResources(o.Status.AppliedResources)
	}
	return obj, nil
}

// compactObjectMeta interns what the works of a cluster repeat in their metadata: their namespace and
// finalizers.
func compactObjectMeta(m *metav1.ObjectMeta) {
	m.Namespace = intern(m.Namespace)
	if m.Finalizers != nil {
		m.Finalizers = slices.Clone(m.Finalizers)
		for i := range m.Finalizers {
			m.Finalizers[i] = intern(m.Finalizers[i])
		}
	}
}

// compactWorkStatus interns the repeated strings of a work's status and fits its lists to their length.
func compactWorkStatus(s *workv1.ManifestWorkStatus) {
	s.Conditions = compactConditions(s.Conditions)
	ms := slices.Clone(s.ResourceStatus.Manifests)
	for i := range ms {
		m := &ms[i]
		rm := &m.ResourceMeta
		rm.Group, rm.Version, rm.Kind, rm.Resource, rm.Namespace = intern(rm.Group), intern(rm.Version), intern(rm.Kind), intern(rm.Resource), intern(rm.Namespace)
		m.Conditions = compactConditions(m.Conditions)
		m.StatusFeedbacks.Values = slices.Clone(m.StatusFeedbacks.Values)
		for j := range m.StatusFeedbacks.Values {
			m.StatusFeedbacks.Values[j].Name = intern(m.StatusFeedbacks.Values[j].Name)
		}
	}
	s.ResourceStatus.Manifests = ms
}

func compactConditions(conds []metav1.Condition) []metav1.Condition {
	conds = slices.Clone(conds)
	for i := range conds {
		c := &conds[i]
		c.Type, c.Reason, c.Message = intern(c.Type), intern(c.Reason), intern(c.Message)
		c.Status = metav1.ConditionStatus(intern(string(c.Status)))
	}
	return conds
}

// compactAppliedResources interns what the applied resources of a work share with other works and fits
// their list to its length.
func compactAppliedResources(rs []workv1.AppliedManifestResourceMeta) []workv1.AppliedManifestResourceMeta {
	rs = slices.Clone(rs)
	for i := range rs {
		r := &rs[i]
		r.Group, r.Version, r.Resource, r.Namespace = intern(r.Group), intern(r.Version), intern(r.Resource), intern(r.Namespace)
	}
	return rs
}

// intern returns the one copy of s the agent keeps while anything uses it.
func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}
