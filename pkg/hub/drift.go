package hub

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// workDrift is how many of a work's objects drifted, and when the latest of them was changed.
type workDrift struct {
	objects int
	latest  time.Time
}

// driftedObject is a drifted object as the AppConfig's status names it, with the work and the manifest
// it is of: what orders objects changed at the same second.
type driftedObject struct {
	work    types.NamespacedName
	ordinal int32
	object  v1alpha2.DriftedObject
}

// driftedObjectsOf are mw's objects its agent found changed on the cluster and put back for the work's
// generation, among the objects rendered now (current; all of them when it is empty, as clusterStatus
// judges). An earlier revision's workload kept for a rollout is retired on the cluster by its rollout
// trait, and is no drift of the application. It allocates nothing for a work that never drifted:
// workSummaries reads every work of a fleet with it.
func driftedObjectsOf(mw *workv1.ManifestWork, current map[string]bool) []driftedObject {
	var out []driftedObject
	for _, m := range mw.Status.ResourceStatus.Manifests {
		d, ok := workreport.DriftOf(m.Conditions, mw.Generation)
		rm := m.ResourceMeta
		if !ok || (len(current) > 0 && !current[rm.Kind+"/"+rm.Name]) {
			continue
		}
		out = append(out, driftedObject{work: client.ObjectKeyFromObject(mw), ordinal: rm.Ordinal, object: listedDrift(mw.Namespace, rm, d)})
	}
	return out
}

// driftOf is how many of mw's objects drifted (driftedObjectsOf) and when the latest was changed.
func driftOf(mw *workv1.ManifestWork, current map[string]bool) workDrift {
	var d workDrift
	for _, o := range driftedObjectsOf(mw, current) {
		d.objects++
		if o.object.Time.After(d.latest) {
			d.latest = o.object.Time.Time
		}
	}
	return d
}

// listedDrift is a manifest's drift as the AppConfig's status names it: its managers and fields cut to
// what the status lists, the fields left out counted.
func listedDrift(cluster string, rm workv1.ManifestResourceMeta, d workreport.Drift) v1alpha2.DriftedObject {
	fields := d.Fields[:min(len(d.Fields), v1alpha2.MaxDriftFieldsListed)]
	return v1alpha2.DriftedObject{Cluster: cluster, Kind: rm.Kind, Namespace: rm.Namespace, Name: rm.Name,
		Managers: d.Managers[:min(len(d.Managers), v1alpha2.MaxDriftManagersListed)],
		Fields:   fields, MoreFields: int32(d.MoreFields + len(d.Fields) - len(fields)),
		Count: int32(d.Count), Time: metav1.NewTime(d.Time)}
}

// driftedObjectsOfAll are the drifted objects of works (driftedObjectsOf).
func driftedObjectsOfAll(works []*workv1.ManifestWork, current map[string]bool) []driftedObject {
	var all []driftedObject
	for _, mw := range works {
		all = append(all, driftedObjectsOf(mw, current)...)
	}
	return all
}

// latestDrifted are the limit objects of all changed most recently, the latest first: the same list
// for the same objects, whatever order they come in. It sorts all.
func latestDrifted(all []driftedObject, limit int) []v1alpha2.DriftedObject {
	slices.SortFunc(all, func(a, b driftedObject) int {
		return cmp.Or(b.object.Time.Compare(a.object.Time.Time), byCluster(a.work, b.work), cmp.Compare(a.ordinal, b.ordinal))
	})
	var out []v1alpha2.DriftedObject
	for _, o := range all[:min(len(all), limit)] {
		out = append(out, o.object)
	}
	return out
}

// driftStatus is the AppConfig's drift report from the counts of drifted clusters and objects and the
// latest objects; nil when no object drifted, so that the status carries nothing of it.
func driftStatus(clusters, objects int, latest []v1alpha2.DriftedObject) *v1alpha2.DriftStatus {
	if clusters == 0 {
		return nil
	}
	return &v1alpha2.DriftStatus{Clusters: int32(clusters), Objects: int32(objects), Latest: latest}
}

// ReasonDrifted is the reason of the Warning event on an AppConfig that an agent reported one of its
// objects changed on a cluster and put back.
const ReasonDrifted = "Drifted"

// newlyDrifted are the objects of drift's latest reported again since was: not listed there, or listed
// with another count or time. An object that stays as it was is no news, so that reconciling an
// unchanged drift adds no event.
func newlyDrifted(was, drift *v1alpha2.DriftStatus) []v1alpha2.DriftedObject {
	if drift == nil {
		return nil
	}
	var out []v1alpha2.DriftedObject
	for _, o := range drift.Latest {
		if was == nil || !slices.ContainsFunc(was.Latest, func(w v1alpha2.DriftedObject) bool {
			return w.Cluster == o.Cluster && w.Kind == o.Kind && w.Namespace == o.Namespace && w.Name == o.Name &&
				w.Count == o.Count && w.Time.Equal(&o.Time)
		}) {
			out = append(out, o)
		}
	}
	return out
}

// driftNote is the note of the Drifted event about o: where, what, who and how often.
func driftNote(o v1alpha2.DriftedObject) string {
	object := o.Kind + " " + o.Name
	if o.Namespace != "" {
		object = o.Kind + " " + o.Namespace + "/" + o.Name
	}
	by, fields := workreport.ChangedBy(o.Managers, o.Fields, int(o.MoreFields))
	times := "time"
	if o.Count != 1 {
		times = "times"
	}
	return fmt.Sprintf("%s on cluster %s was changed by %s (%s) and put back by its agent; %d %s so far",
		object, o.Cluster, by, fields, o.Count, times)
}
