package statusview

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
)

// The fixtures build ManifestWorks as the hub stores them after an agent reported: a spec of
// manifests, and a status with one entry per manifest.

// object is a manifest's content: apiVersion, kind, namespace, name.
type object struct{ apiVersion, kind, namespace, name string }

var (
	configMap  = object{"v1", "ConfigMap", "hello", "greeting"}
	deployment = object{"apps/v1", "Deployment", "hello", "web"}
	namespace  = object{"v1", "Namespace", "", "hello"}
)

func (o object) meta(ordinal int32) workv1.ManifestResourceMeta {
	gv, err := schema.ParseGroupVersion(o.apiVersion)
	if err != nil {
		panic(err)
	}
	resources := map[string]string{"ConfigMap": "configmaps", "Deployment": "deployments", "Namespace": "namespaces"}
	return workv1.ManifestResourceMeta{Ordinal: ordinal, Group: gv.Group, Version: gv.Version, Kind: o.kind,
		Resource: resources[o.kind], Namespace: o.namespace, Name: o.name}
}

// work is a ManifestWork of generation gen in namespace cluster holding objs.
func work(t *testing.T, cluster string, gen int64, objs ...object) *workv1.ManifestWork {
	t.Helper()
	mw := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: cluster, Generation: gen}}
	for _, o := range objs {
		md := map[string]any{"name": o.name}
		if o.namespace != "" {
			md["namespace"] = o.namespace
		}
		raw, err := json.Marshal(map[string]any{"apiVersion": o.apiVersion, "kind": o.kind, "metadata": md})
		if err != nil {
			t.Fatal(err)
		}
		mw.Spec.Workload.Manifests = append(mw.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	return mw
}

// cond is a condition about generation gen.
func cond(typ string, status metav1.ConditionStatus, gen int64, reason, message string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, ObservedGeneration: gen, Reason: reason, Message: message}
}

// healthyReport is what ferry-agent reports for an applied, present, healthy object at generation gen.
func healthyReport(o object, ordinal int32, gen int64) workv1.ManifestCondition {
	return workv1.ManifestCondition{ResourceMeta: o.meta(ordinal), Conditions: []metav1.Condition{
		cond(workv1.ManifestApplied, metav1.ConditionTrue, gen, "AppliedManifestComplete", "Apply manifest complete"),
		cond(workv1.ManifestAvailable, metav1.ConditionTrue, gen, "ResourceAvailable", "Resource is available"),
		cond(workv1.ManifestProgressing, metav1.ConditionFalse, gen, "ResourceCurrent", "Resource is current"),
		cond(workv1.ManifestDegraded, metav1.ConditionFalse, gen, "ResourceCurrent", "Resource is current"),
	}}
}

// with returns r with its condition of c's type replaced by c.
func with(r workv1.ManifestCondition, cs ...metav1.Condition) workv1.ManifestCondition {
	out := r
	out.Conditions = nil
	for _, old := range r.Conditions {
		replaced := false
		for _, c := range cs {
			if c.Type == old.Type {
				out.Conditions, replaced = append(out.Conditions, c), true
			}
		}
		if !replaced {
			out.Conditions = append(out.Conditions, old)
		}
	}
	return out
}

// without returns r without its conditions of types.
func without(r workv1.ManifestCondition, types ...string) workv1.ManifestCondition {
	out := r
	out.Conditions = nil
	for _, c := range r.Conditions {
		keep := true
		for _, typ := range types {
			keep = keep && c.Type != typ
		}
		if keep {
			out.Conditions = append(out.Conditions, c)
		}
	}
	return out
}

// reported sets the work's status: its own Applied/Available True at its generation, and reports.
func reported(mw *workv1.ManifestWork, reports ...workv1.ManifestCondition) *workv1.ManifestWork {
	mw.Status.Conditions = []metav1.Condition{
		cond(workv1.WorkApplied, metav1.ConditionTrue, mw.Generation, "AppliedManifestWorkComplete", ""),
		cond(workv1.WorkAvailable, metav1.ConditionTrue, mw.Generation, "ResourcesAvailable", ""),
	}
	mw.Status.ResourceStatus.Manifests = reports
	return mw
}

func strategy(o object, typ workv1.UpdateStrategyType) workv1.ManifestConfigOption {
	m := o.meta(0)
	return workv1.ManifestConfigOption{
		ResourceIdentifier: workv1.ResourceIdentifier{Group: m.Group, Resource: m.Resource, Namespace: m.Namespace, Name: m.Name},
		UpdateStrategy:     &workv1.UpdateStrategy{Type: typ},
	}
}

func intFeedback(name string, v int64) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To(v)}}
}
