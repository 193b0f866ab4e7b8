package hub

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
)

// ownWriteFresh is how long the hub trusts its own write of a work over a cache that does not show it
// yet: longer than the cache's lag on an API server saturated by a fleet's reports (past 10 s at 1,000
// clusters on two cores, where every write repeated adds to the lag), short enough that a work someone
// else changed or deleted in the same moment is written again soon. Only the hub writes a work's spec,
// and a work it deletes is forgotten at once.
const ownWriteFresh = 30 * time.Second

// ownWrite is a ManifestWork write of this hub's: what it wrote (writtenAs: the spec hash and the
// revision), when, whether it created the work, and the UID of the work written.
type ownWrite struct {
	written string
	at      time.Time
	created bool
	uid     types.UID
}

// recentWorkWrites remembers the ManifestWorks this hub wrote in the last ownWriteFresh, by AppConfig. A
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
// (have nil); uid is the written work's.
func (o *recentWorkWrites) record(app, work types.NamespacedName, have *workv1.ManifestWork, written string, uid types.UID, now time.Time) {
	w := ownWrite{written: written, at: now, created: have == nil, uid: uid}
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

// unseen reports whether this hub wrote work as written less than ownWriteFresh ago, so that have, the
// work as the cache shows it, is from before that write: the cache is behind (any version of the work,
// also one the agent wrote the status of since, shows another spec hash or revision), or has not shown
// the created work yet (nil). A work the cache shows gone after an update is not unseen: someone
// deleted it.
//
// The hashes, not the resourceVersion, say which write the cache shows: the agents write the works'
// status all the while, and a cache catching up with one of those writes is still behind the hub's.
func (o *recentWorkWrites) unseen(app, work types.NamespacedName, have *workv1.ManifestWork, written string, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	w, ok := o.byApp[app][work]
	if !ok || w.written != written || now.Sub(w.at) >= ownWriteFresh {
		return false
	}
	return have != nil || w.created
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

// forgetOld drops app's writes older than ownWriteFresh, and app with them when none is left.
func (o *recentWorkWrites) forgetOld(app types.NamespacedName, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for work, w := range o.byApp[app] {
		if now.Sub(w.at) >= ownWriteFresh {
			delete(o.byApp[app], work)
		}
	}
	if len(o.byApp[app]) == 0 {
		delete(o.byApp, app)
	}
}
