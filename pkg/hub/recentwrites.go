package hub

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	workv1 "open-cluster-management.io/api/work/v1"
)

// ownWriteFresh is how long the hub trusts its own write of a work over a cache that does not show it
// when the cache cannot tell how far behind it is: a work it created and the cache shows none of, or a
// resourceVersion that does not compare. Longer than the cache's lag on an API server saturated by a
// fleet's reports (past 10 s at 1,000 clusters on two cores, where every write repeated adds to the
// lag), short enough that a work someone else changed or deleted in the same moment is written again
// soon. Only the hub writes a work's spec, and a work it deletes is forgotten at once.
const ownWriteFresh = 30 * time.Second

// ownWriteKept is how long the hub trusts its own write of a work over a cache that shows an older
// version of it (by resourceVersion, which kube-apiserver makes comparable): as long as the cache is
// behind, and no longer than this. At 10,000 clusters a rollout's writes and the fleet's reports kept
// the cache of works over a minute behind; trusting writes for ownWriteFresh only, every pass of a
// rollout wrote again what it had written a minute before (64,229 work patches for 22,000 changes),
// which put the cache further behind.
const ownWriteKept = 10 * time.Minute

// ownWrite is a ManifestWork write of this hub's: what it wrote (writtenAs: the spec hash and the
// revision), when, whether it created the work, and the UID and resourceVersion of the work written.
type ownWrite struct {
	written string
	at      time.Time
	created bool
	uid     types.UID
	version string
}

// recentWorkWrites remembers the ManifestWorks this hub wrote until its cache shows them, by AppConfig. A
// rollout looks at every work of its AppConfig on each batch of reports; a work it moved a moment ago
// that the cache still shows from before would be written again — on a fleet reporting while a change
// rolls over it, twice as many writes as there are changes, each as costly to the API server as the
// first. Only writes fill it and only delivery passes read it: the hot path, the ManifestWork events,
// never touches it, and each AppConfig's entries are dropped by its next pass once they are old.
type recentWorkWrites struct {
	mu    sync.Mutex
	byApp map[types.NamespacedName]map[types.NamespacedName]ownWrite
}

// record remembers that work was written as written (writtenAs), created when the cache showed none
// (have nil); stored is the work as the API server answered the write (its UID and resourceVersion).
func (o *recentWorkWrites) record(app, work types.NamespacedName, have *workv1.ManifestWork, written string, stored metav1.Object, now time.Time) {
	w := ownWrite{written: written, at: now, created: have == nil, uid: stored.GetUID(), version: stored.GetResourceVersion()}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byApp == nil {
		o.byApp = map[types.NamespacedName]map[types.NamespacedName]ownWrite{}
	}
	if o.byApp[app] == nil {
		o.byApp[app] = map[types.NamespacedName]ownWrite{}
	}
	o.byApp[app][work] = w
}

// unseen reports whether this hub wrote work as written, so that have, the work as the cache shows it,
// is from before that write: an older resourceVersion than the write's (also a version the agent wrote
// the status of since: the cache shows another spec hash or revision) while the write is younger than
// ownWriteKept, or, where versions do not tell, a write younger than ownWriteFresh; or the cache has not
// shown the created work yet (nil, ownWriteFresh). A cache that shows the write's version or a later one
// with another spec says someone changed the work since; a work the cache shows gone after an update is
// not unseen: someone deleted it.
func (o *recentWorkWrites) unseen(app, work types.NamespacedName, have *workv1.ManifestWork, written string, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	w, ok := o.byApp[app][work]
	if !ok || w.written != written {
		return false
	}
	age := now.Sub(w.at)
	if have == nil {
		return w.created && age < ownWriteFresh
	}
	if behind, known := w.behind(have); known {
		return behind && age < ownWriteKept
	}
	return age < ownWriteFresh
}

// behind reports whether have is a version of the work from before w, and whether the versions tell.
func (w ownWrite) behind(have metav1.Object) (behind, known bool) {
	c, err := resourceversion.CompareResourceVersion(have.GetResourceVersion(), w.version)
	if err != nil {
		return false, false
	}
	return c < 0, true
}

// deleted drops what is remembered of a work the cache showed and then saw deleted (uid is the deleted
// work's): a work this hub created that the cache shows none of is no longer one the cache has not
// caught up with, but one someone deleted, to be put back at once. A deletion of an earlier work of
// the same name, reported after this hub wrote a new one, leaves the new one's write remembered.
func (o *recentWorkWrites) deleted(app, work types.NamespacedName, uid types.UID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if w, ok := o.byApp[app][work]; ok && w.uid == uid {
		delete(o.byApp[app], work)
	}
}

// forget drops what is remembered of work: this hub deleted it.
func (o *recentWorkWrites) forget(app, work types.NamespacedName) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.byApp[app], work)
}

// forgetOld drops app's writes that no longer hold anything back: those older than ownWriteKept, and
// those older than ownWriteFresh that the cache (cached: the work as it shows it, nil if it shows none)
// has caught up with or cannot be compared with; and app with them when none is left.
func (o *recentWorkWrites) forgetOld(app types.NamespacedName, cached func(work types.NamespacedName) metav1.Object, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for work, w := range o.byApp[app] {
		age := now.Sub(w.at)
		if age < ownWriteFresh {
			continue
		}
		have := cached(work)
		if have == nil || age >= ownWriteKept {
			delete(o.byApp[app], work)
			continue
		}
		if behind, known := w.behind(have); !known || !behind {
			delete(o.byApp[app], work)
		}
	}
	if len(o.byApp[app]) == 0 {
		delete(o.byApp, app)
	}
}
