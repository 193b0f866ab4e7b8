package hub

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// workSummaries keeps, for every AppConfig the hub delivers, the verdict on each of its ManifestWorks
// (applied, available, healthy, as clusterStatus judges it), what drifted on their clusters
// (driftedObjectsOf), and their counts, taken as each work changes in the cache. An AppConfig's summary
// then costs what its agents changed, not its fleet: at 10,000 clusters, judging every work again on
// each batch of reports (the conditions of 10,000 works spread over the heap) was most of ferry-hub's
// CPU.
//
// The ManifestWork event handler calls observe before it enqueues the AppConfigs concerned, so a
// reconcile brought by an event finds that event's verdict already counted. A verdict depends on the
// work alone and on the objects the AppConfig renders now (v1alpha2.CurrentObjects), which only the
// reconcile knows: when they change (a new revision rolling out), summarize judges every work again,
// once.
type workSummaries struct {
	// owns says which AppConfigs this hub keeps verdicts for: those of its shard.
	owns func(types.NamespacedName) bool

	mu   sync.Mutex
	apps map[types.NamespacedName]*appWorkSummaries
}

// appWorkSummaries are the verdicts on one AppConfig's works.
type appWorkSummaries struct {
	// current are the objects rendered when the verdicts were taken; judged says they are known.
	current map[string]bool
	judged  bool
	// works holds every ManifestWork labelled for the AppConfig (what the cache's index of works
	// holds), by its namespace and name.
	works                       map[types.NamespacedName]workSummary
	applied, available, healthy int
	notFine                     map[types.NamespacedName]bool
	// drifts are the works with drifted objects, and driftedObjects counts those objects: nothing is
	// kept of a work that never drifted (the map is made for the first one that does).
	drifts         map[types.NamespacedName]workDrift
	driftedObjects int
}

// workSummary is a work as the cache holds it (read only) and the verdict on it.
type workSummary struct {
	work               *workv1.ManifestWork
	applied, available bool
	healthy, fine      bool
	// rollout is what a rollout reads of the work, whatever the objects rendered now.
	rollout rolloutFacts
}

func newWorkSummaries(owns func(types.NamespacedName) bool) *workSummaries {
	return &workSummaries{owns: owns, apps: map[types.NamespacedName]*appWorkSummaries{}}
}

// observe takes a ManifestWork event into the verdicts: a created or updated work (updated, with old)
// is judged again, a deleted one (updated nil) leaves its AppConfig's, and a relabelled one moves from
// one AppConfig's to the other's. Works are the cache's own objects and are kept, never changed.
func (v *workSummaries) observe(old, updated client.Object) {
	oldWork, _ := old.(*workv1.ManifestWork)
	newWork, _ := updated.(*workv1.ManifestWork)
	v.mu.Lock()
	defer v.mu.Unlock()
	if oldWork != nil {
		if app, ok := v.appOf(oldWork); ok && (newWork == nil || !sameAppConfigLabels(oldWork, newWork)) {
			v.apps[app].forget(client.ObjectKeyFromObject(oldWork))
			if len(v.apps[app].works) == 0 {
				delete(v.apps, app)
			}
		}
	}
	if newWork == nil {
		return
	}
	app, ok := appConfigOfLabels(newWork)
	if !ok || (v.owns != nil && !v.owns(app)) {
		return
	}
	a := v.apps[app]
	if a == nil {
		a = &appWorkSummaries{works: map[types.NamespacedName]workSummary{}, notFine: map[types.NamespacedName]bool{}}
		v.apps[app] = a
	}
	a.put(newWork)
}

// appOf is the AppConfig whose verdicts hold mw, if any do.
func (v *workSummaries) appOf(mw *workv1.ManifestWork) (types.NamespacedName, bool) {
	app, ok := appConfigOfLabels(mw)
	if !ok || v.apps[app] == nil {
		return app, false
	}
	return app, true
}

func sameAppConfigLabels(a, b client.Object) bool {
	return a.GetLabels()[LabelAppConfigNamespace] == b.GetLabels()[LabelAppConfigNamespace] &&
		a.GetLabels()[LabelAppConfigName] == b.GetLabels()[LabelAppConfigName]
}

// summarize counts the AppConfig's clusters from the verdicts on their ManifestWorks and lists the
// first v1alpha2.MaxClustersListed that are not fine by name, counting the rest: the status is the same
// size for ten clusters or ten thousand, and a change on a fine cluster beyond the list changes a count,
// not a list. Its drift counts the clusters and objects that drifted and names the latest
// v1alpha2.MaxDriftedObjectsListed (nil when none drifted). current are the objects rendered now
// (v1alpha2.CurrentObjects); the works in gone, which this reconcile deleted, are no longer counted.
func (v *workSummaries) summarize(app types.NamespacedName, current map[string]bool, gone map[types.NamespacedName]bool) (summary *v1alpha2.Summary, listed []v1alpha2.ClusterStatus, omitted int32, drift *v1alpha2.DriftStatus) {
	v.mu.Lock()
	a := v.apps[app]
	if a == nil {
		a = &appWorkSummaries{}
	}
	if !a.judged || !maps.Equal(a.current, current) {
		a.summarizeAll(current)
	}
	n, applied, available, healthy := len(a.works), a.applied, a.available, a.healthy
	notFine := len(a.notFine)
	drifted, driftedObjects := len(a.drifts), a.driftedObjects
	for key := range gone {
		w, ok := a.works[key]
		if !ok {
			continue
		}
		n, notFine = n-1, notFine-count(!w.fine)
		applied, available, healthy = applied-count(w.applied), available-count(w.available), healthy-count(w.healthy)
		if d, ok := a.drifts[key]; ok {
			drifted, driftedObjects = drifted-1, driftedObjects-d.objects
		}
	}
	first := a.worksOf(firstKeys(a.notFine, v1alpha2.MaxClustersListed, gone, byCluster))
	latest := a.worksOf(firstKeys(a.drifts, v1alpha2.MaxDriftedObjectsListed, gone, a.byLatestDrift))
	v.mu.Unlock()

	// The cache's works do not change: the listed ones are told in detail outside the lock.
	for _, mw := range first {
		listed = append(listed, listedCluster(clusterStatus(mw, current, true), current))
	}
	summary = &v1alpha2.Summary{Clusters: int32(n), Applied: fmt.Sprintf("%d/%d", applied, n), Available: fmt.Sprintf("%d/%d", available, n),
		Healthy: fmt.Sprintf("%d/%d", healthy, n)}
	drift = driftStatus(drifted, driftedObjects, latestDrifted(driftedObjectsOfAll(latest, current), v1alpha2.MaxDriftedObjectsListed))
	return summary, listed, int32(notFine - len(listed)), drift
}

func count(b bool) int {
	if b {
		return 1
	}
	return 0
}

// summarizeWork is the verdict on mw, against the objects rendered now.
func summarizeWork(mw *workv1.ManifestWork, current map[string]bool) workSummary {
	cs := clusterStatus(mw, current, false)
	return workSummary{work: mw, applied: cs.Applied == metav1.ConditionTrue, available: cs.Available == metav1.ConditionTrue,
		healthy: cs.Health == v1alpha2.Healthy, fine: cs.Fine()}
}

// summarizeAll judges every work again against the objects rendered now.
func (a *appWorkSummaries) summarizeAll(current map[string]bool) {
	a.current, a.judged = current, true
	a.applied, a.available, a.healthy = 0, 0, 0
	clear(a.notFine)
	clear(a.drifts)
	a.driftedObjects = 0
	for key, w := range a.works {
		facts := w.rollout
		w = summarizeWork(w.work, current)
		w.rollout = facts
		a.works[key] = w
		a.tally(key, w, 1)
		a.putDrift(key, w.work)
	}
}

// put judges mw, replacing the verdict on its earlier version.
func (a *appWorkSummaries) put(mw *workv1.ManifestWork) {
	key := client.ObjectKeyFromObject(mw)
	a.forget(key)
	w := summarizeWork(mw, a.current)
	w.rollout = rolloutFactsOf(mw)
	a.works[key] = w
	a.tally(key, w, 1)
	a.putDrift(key, mw)
}

// forget drops the verdict on the work key, if there is one.
func (a *appWorkSummaries) forget(key types.NamespacedName) {
	if w, ok := a.works[key]; ok {
		delete(a.works, key)
		a.tally(key, w, -1)
	}
	if d, ok := a.drifts[key]; ok {
		delete(a.drifts, key)
		a.driftedObjects -= d.objects
	}
}

// putDrift counts mw's drifted objects, if it has any.
func (a *appWorkSummaries) putDrift(key types.NamespacedName, mw *workv1.ManifestWork) {
	d := driftOf(mw, a.current)
	if d.objects == 0 {
		return
	}
	if a.drifts == nil {
		a.drifts = map[types.NamespacedName]workDrift{}
	}
	a.drifts[key] = d
	a.driftedObjects += d.objects
}

// tally adds a verdict to the counts (sign 1) or takes it out of them (-1).
func (a *appWorkSummaries) tally(key types.NamespacedName, w workSummary, sign int) {
	a.applied += sign * count(w.applied)
	a.available += sign * count(w.available)
	a.healthy += sign * count(w.healthy)
	switch {
	case w.fine:
	case sign > 0:
		a.notFine[key] = true
	default:
		delete(a.notFine, key)
	}
}

// firstKeys are the first limit keys of set in order, leaving out those in gone. It keeps the first
// ones in order as it goes over them all: before its agents report, every one of an AppConfig's 10,000
// clusters is not fine, and sorting them all on every reconcile is what this avoids.
func firstKeys[V any](set map[types.NamespacedName]V, limit int, gone map[types.NamespacedName]bool, order func(x, y types.NamespacedName) int) []types.NamespacedName {
	var first []types.NamespacedName
	for key := range set {
		if limit == 0 || gone[key] || (len(first) == limit && order(key, first[limit-1]) > 0) {
			continue
		}
		i, _ := slices.BinarySearchFunc(first, key, order)
		first = slices.Insert(first, i, key)
		if len(first) > limit {
			first = first[:limit]
		}
	}
	return first
}

// byCluster orders works by cluster, then by name.
func byCluster(x, y types.NamespacedName) int {
	return cmp.Or(strings.Compare(x.Namespace, y.Namespace), strings.Compare(x.Name, y.Name))
}

// byLatestDrift orders drifted works by their latest change, the latest first, then by cluster: the
// works that hold the latest drifted objects come first (latestDrifted orders objects alike).
func (a *appWorkSummaries) byLatestDrift(x, y types.NamespacedName) int {
	return cmp.Or(a.drifts[y].latest.Compare(a.drifts[x].latest), byCluster(x, y))
}

// worksOf are the works of keys.
func (a *appWorkSummaries) worksOf(keys []types.NamespacedName) []*workv1.ManifestWork {
	out := make([]*workv1.ManifestWork, 0, len(keys))
	for _, key := range keys {
		out = append(out, a.works[key].work)
	}
	return out
}

// rolloutFacts are the rollout facts of every work of the AppConfig, by cluster.
func (v *workSummaries) rolloutFacts(app types.NamespacedName) map[string]rolloutFacts {
	v.mu.Lock()
	defer v.mu.Unlock()
	a := v.apps[app]
	if a == nil {
		return nil
	}
	out := make(map[string]rolloutFacts, len(a.works))
	for key, w := range a.works {
		out[key.Namespace] = w.rollout
	}
	return out
}
