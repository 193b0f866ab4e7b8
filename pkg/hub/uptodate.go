package hub

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// An AppConfig on a fleet is reconciled again and again for its agents' status reports, which change
// nothing deliver looks at. Checking every work of the fleet against the rendered spec each time cost
// ferry-hub most of its CPU at 10,000 clusters. upToDateDeliveries remembers, per AppConfig, the delivery
// a pass found complete, and the pass is skipped while nothing it depends on has changed since:
//
//   - what the AppConfig renders, known by the spec hash of its ManifestWork;
//   - the clusters it targets (its placement is in its generation; ManagedClusters,
//     PlacementDecisions, ManagedClusterSets and their bindings move it too);
//   - its works, other than by their status: created, deleted, relabelled, edited by someone else.
//
// The last two are counted by one number, changes, which the event handlers of ManifestWorks,
// ManagedClusters, PlacementDecisions, ManagedClusterSets and their bindings raise before they enqueue the AppConfigs concerned. A
// reconcile reads it before it reads anything from the cache: should an event come while it runs, the
// number it remembers is already behind, and the reconcile that event brings checks every work again.
type upToDateDeliveries struct {
	changes atomic.Uint64
	found   sync.Map // types.NamespacedName → upToDateDelivery
}

// upToDateDelivery is a delivery a pass found complete: every target cluster's work up to date, nothing
// to write or delete, nothing failed.
type upToDateDelivery struct {
	// changes is what upToDateDeliveries.changes was before the pass read the cache.
	changes uint64
	// generation is the AppConfig's when the clusters were found.
	generation int64
	specHash   string
	placed     Placed
}

// changed records an event that may leave a delivered work out of date or move a placement.
func (d *upToDateDeliveries) changed() { d.changes.Add(1) }

// now is the count a reconcile about to read the cache remembers.
func (d *upToDateDeliveries) now() uint64 { return d.changes.Load() }

// placement is where the AppConfig's placement reached as the last complete pass found it, if nothing
// moved it since.
func (d *upToDateDeliveries) placement(app types.NamespacedName, generation int64, seen uint64) (Placed, bool) {
	c, ok := d.last(app)
	if !ok || c.changes != seen || c.generation != generation {
		return Placed{}, false
	}
	return c.placed, true
}

// complete reports whether the last complete pass of app checked this same spec on these same clusters
// with nothing changed since: the works need no pass.
func (d *upToDateDeliveries) complete(app types.NamespacedName, generation int64, seen uint64, specHash string, placed Placed) bool {
	c, ok := d.last(app)
	return ok && c.changes == seen && c.generation == generation && c.specHash == specHash && c.placed.equal(placed)
}

// record remembers a complete pass; forget drops what is remembered of an AppConfig (gone, another
// shard's, or its pass did not complete).
func (d *upToDateDeliveries) record(app types.NamespacedName, c upToDateDelivery) {
	d.found.Store(app, c)
}

func (d *upToDateDeliveries) forget(app types.NamespacedName) { d.found.Delete(app) }

func (d *upToDateDeliveries) last(app types.NamespacedName) (upToDateDelivery, bool) {
	v, ok := d.found.Load(app)
	if !ok {
		return upToDateDelivery{}, false
	}
	return v.(upToDateDelivery), true
}

// manifestWorkChecks counts the hub's comparisons of a cached ManifestWork with the AppConfig's
// rendered spec: a fleet's status reports, which change nothing to deliver, add none.
var manifestWorkChecks = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "ferry_hub_manifestwork_checks_total",
	Help: "ManifestWorks the hub compared with their AppConfig's rendered spec in delivery passes. " +
		"A pass runs when the AppConfig, what it renders, its placement or its works (other than their status) changed.",
})

func init() {
	ctrlmetrics.Registry.MustRegister(manifestWorkChecks)
}
