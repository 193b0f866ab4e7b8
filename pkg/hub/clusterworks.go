package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/override"
	"github.com/ferry-mc/ferry/pkg/render"
)

// clusterWorks builds, for one delivery pass, the work each cluster gets of a revision: the revision's
// own work where no override selects the cluster, and otherwise that work changed by the overrides
// that do (package override), hashed as its own spec (AnnotationSpecHash) and marked with its
// revision (AnnotationRevisionHash).
//
// Which work a cluster gets is known before it is built: its spec hash is a hash of the revision's and
// of the overrides resolved for the cluster (Resolve), so a pass compares every cluster's stored work
// with what it is to get without building it, and builds only the works it writes. Clusters whose
// overrides resolve alike — the same entries select them and read the same facts — share one build,
// up to maxSharedBuilds of them: a fleet of a few regions costs a few builds a change, and one whose
// clusters each get a value of their own keeps no more than it writes at once.
type clusterWorks struct {
	facts map[string]override.Cluster
	mu    sync.Mutex // guards built: the writers build at once
	built map[string]builtWork
}

// maxSharedBuilds is how many builds a pass keeps to share between clusters that resolve alike.
const maxSharedBuilds = 64

// builtWork is one build: the work, or why the overrides cannot make it.
type builtWork struct {
	work *workv1.ManifestWork
	err  error
}

// newClusterWorks reads the facts of app's clusters its revisions' overrides may read: nothing when
// no revision of plan has overrides.
func (r *AppConfigReconciler) newClusterWorks(ctx context.Context, app *v1alpha2.ApplicationConfiguration, plan deliveryPlan) (*clusterWorks, error) {
	w := &clusterWorks{}
	if !plan.hasOverrides() {
		return w, nil
	}
	clusters, err := r.clusters(ctx)
	if err != nil {
		return nil, fmt.Errorf("list ManagedClusters: %w", err)
	}
	groups, err := decisionGroups(ctx, r.Client, app)
	if err != nil {
		return nil, err
	}
	w.facts, w.built = make(map[string]override.Cluster, len(clusters)), map[string]builtWork{}
	for _, mc := range clusters {
		w.facts[mc.Name] = override.ClusterOf(mc, groups[mc.Name])
	}
	return w, nil
}

// clusterWork is the work one cluster is to get of a revision.
type clusterWork struct {
	// want has the work's name, labels and annotations (its spec hash and revision), and its spec
	// when it is the revision's own: what deliver compares with the stored work. Read only.
	want *workv1.ManifestWork
	// build is the whole work, built on the first call. Read only.
	build func() (*workv1.ManifestWork, error)
}

// of is the work cluster gets of base. An error is an override that cannot be resolved for the cluster
// (a fact it lacks); one that cannot be applied is build's.
func (w *clusterWorks) of(base *revisionBase, cluster string) (clusterWork, error) {
	if len(base.Overrides) == 0 {
		return clusterWork{want: base.Work, build: func() (*workv1.ManifestWork, error) { return base.Work, nil }}, nil
	}
	facts, ok := w.facts[cluster]
	if !ok {
		facts = override.Cluster{Name: cluster} // gone from the hub since it was placed
	}
	resolved, err := override.Resolve(base.Overrides, facts)
	if err != nil {
		return clusterWork{}, err
	}
	key, err := json.Marshal(resolved)
	if err != nil {
		return clusterWork{}, fmt.Errorf("encode the overrides of cluster %s: %w", cluster, err)
	}
	if base.Components != nil && slices.ContainsFunc(resolved, func(o v1alpha2.Override) bool { return len(o.Components) > 0 }) {
		// What the cluster gets depends on the components' parameters too: so does its hash.
		comps, err := json.Marshal(base.Components)
		if err != nil {
			return clusterWork{}, fmt.Errorf("encode what overrides need of components: %w", err)
		}
		key = append(append(key, '\n'), comps...)
	}
	want := &workv1.ManifestWork{ObjectMeta: *base.Work.ObjectMeta.DeepCopy()}
	want.Annotations[AnnotationRevisionHash] = base.hash()
	if len(resolved) > 0 {
		// The spec is a pure function of the revision's and the resolved overrides: so is its hash.
		want.Annotations[AnnotationSpecHash] = render.SpecHash(append([]byte(base.Work.Annotations[AnnotationSpecHash]+"\n"), key...))
	}
	id := base.hash() + "\n" + string(key)
	build := func() (*workv1.ManifestWork, error) {
		w.mu.Lock()
		b, ok := w.built[id]
		w.mu.Unlock()
		if ok {
			return b.work, b.err
		}
		b.work, b.err = buildClusterWork(base, want.Annotations, resolved)
		if b.err != nil {
			b.err = setCluster(b.err, cluster)
		}
		w.mu.Lock()
		if len(w.built) < maxSharedBuilds {
			w.built[id] = b
		}
		w.mu.Unlock()
		return b.work, b.err
	}
	return clusterWork{want: want, build: build}, nil
}

// buildClusterWork is base's work changed by resolved, the overrides selecting a cluster with its facts
// put in, with annotations.
func buildClusterWork(base *revisionBase, annotations map[string]string, resolved []v1alpha2.Override) (*workv1.ManifestWork, error) {
	spec, err := override.Apply(*base.Work.Spec.DeepCopy(), resolved, base.Components)
	if err != nil {
		return nil, err
	}
	mw := &workv1.ManifestWork{ObjectMeta: *base.Work.ObjectMeta.DeepCopy(), Spec: spec}
	mw.Annotations = maps.Clone(annotations)
	return mw, nil
}

// setCluster names cluster in an override's error.
func setCluster(err error, cluster string) error {
	var oe *override.Error
	if errors.As(err, &oe) && oe.Cluster == "" {
		copied := *oe
		copied.Cluster = cluster
		return &copied
	}
	return err
}

// hasOverrides reports whether a revision the plan delivers has overrides.
func (p deliveryPlan) hasOverrides() bool {
	if p.uniform != nil {
		return len(p.uniform.Overrides) > 0
	}
	for _, b := range p.bases {
		if len(b.Overrides) > 0 {
			return true
		}
	}
	return false
}
