package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/override"
)

// clusterWorks builds, for one delivery pass, the work each cluster gets of a revision: the revision's
// own work where no override selects the cluster, and otherwise that work changed by the overrides
// that do (package override), hashed as its own spec (AnnotationSpecHash) and marked with its
// revision (AnnotationRevisionHash). Clusters whose overrides resolve alike — the same entries select
// them and read the same facts — share one build: a fleet of a few regions costs a few builds a pass,
// not one per cluster.
type clusterWorks struct {
	facts map[string]override.Cluster
	built map[string]builtWork // by revision hash and resolved overrides
}

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

// build is the work cluster gets of base; read only, shared by the clusters built alike.
func (w *clusterWorks) build(base *revisionBase, cluster string) (*workv1.ManifestWork, error) {
	if len(base.Overrides) == 0 {
		return base.Work, nil
	}
	facts, ok := w.facts[cluster]
	if !ok {
		facts = override.Cluster{Name: cluster} // gone from the hub since it was placed
	}
	resolved, err := override.Resolve(base.Overrides, facts)
	if err != nil {
		return nil, err
	}
	key, err := json.Marshal(resolved)
	if err != nil {
		return nil, fmt.Errorf("encode the overrides of cluster %s: %w", cluster, err)
	}
	id := base.hash() + "\n" + string(key)
	if b, ok := w.built[id]; ok {
		return b.work, b.err
	}
	b := builtWork{}
	b.work, b.err = buildClusterWork(base, resolved, key)
	if b.err != nil {
		b.err = setCluster(b.err, cluster)
	}
	w.built[id] = b
	return b.work, b.err
}

// buildClusterWork is base's work changed by resolved, the overrides selecting a cluster with its facts
// put in (their encoding resolvedKey).
func buildClusterWork(base *revisionBase, resolved []v1alpha2.Override, resolvedKey []byte) (*workv1.ManifestWork, error) {
	mw := base.Work.DeepCopy()
	mw.Annotations[AnnotationRevisionHash] = base.hash()
	if len(resolved) == 0 {
		return mw, nil // the revision's own spec: its spec hash too
	}
	manifests, err := override.Apply(base.Work.Spec.Workload.Manifests, resolved)
	if err != nil {
		return nil, err
	}
	mw.Spec.Workload.Manifests = manifests
	// The spec is a pure function of the revision's and the resolved overrides: so is its hash.
	mw.Annotations[AnnotationSpecHash] = specHash(append([]byte(base.Work.Annotations[AnnotationSpecHash]+"\n"), resolvedKey...))
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
