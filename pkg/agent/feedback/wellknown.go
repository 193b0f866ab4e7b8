package feedback

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	workv1 "open-cluster-management.io/api/work/v1"
)

// wellKnown maps a kind to the fields a WellKnownStatus rule reports for it, in the order they are reported.
// Like OCM it is keyed by the exact group, version and kind, so a Deployment served as another version has
// no well-known fields. Paths are evaluated from the object root, as JSONPaths rules are.
//
// Deployment, Job and Pod are OCM's table (pkg/work/spoke/statusfeedback/rules) with OCM's names and paths,
// so ManifestWorks written for OCM report the same values. StatefulSet and DaemonSet are Ferry's additions:
// OCM reports an error for them; Ferry names their readiness counters after the status fields, as OCM does
// for Deployment.
var wellKnown = map[schema.GroupVersionKind][]workv1.JsonPath{
	{Group: "apps", Version: "v1", Kind: "Deployment"}: {
		{Name: "ReadyReplicas", Path: ".status.readyReplicas"},
		{Name: "Replicas", Path: ".status.replicas"},
		{Name: "AvailableReplicas", Path: ".status.availableReplicas"},
	},
	{Group: "batch", Version: "v1", Kind: "Job"}: {
		{Name: "JobComplete", Path: `.status.conditions[?(@.type=="Complete")].status`},
		{Name: "JobSucceeded", Path: ".status.succeeded"},
	},
	{Group: "", Version: "v1", Kind: "Pod"}: {
		{Name: "PodReady", Path: `.status.conditions[?(@.type=="Ready")].status`},
		{Name: "PodPhase", Path: ".status.phase"},
	},
	// Ferry additions, not in OCM.
	{Group: "apps", Version: "v1", Kind: "StatefulSet"}: {
		{Name: "ReadyReplicas", Path: ".status.readyReplicas"},
		{Name: "Replicas", Path: ".status.replicas"},
		{Name: "AvailableReplicas", Path: ".status.availableReplicas"},
	},
	{Group: "apps", Version: "v1", Kind: "DaemonSet"}: {
		{Name: "NumberReady", Path: ".status.numberReady"},
		{Name: "DesiredNumberScheduled", Path: ".status.desiredNumberScheduled"},
		{Name: "NumberAvailable", Path: ".status.numberAvailable"},
	},
}

// WellKnownPaths returns the fields a WellKnownStatus rule reports for gvk, in reporting order, or nil when
// the kind has none. The result is a copy the caller may keep or change.
func WellKnownPaths(gvk schema.GroupVersionKind) []workv1.JsonPath {
	paths := wellKnown[gvk]
	if paths == nil {
		return nil
	}
	return append([]workv1.JsonPath(nil), paths...)
}
