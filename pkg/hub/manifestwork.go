package hub

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// Labels on a ManifestWork naming the AppConfig it delivers (the API's, for the hub's readers).
const (
	LabelAppConfigNamespace = v1alpha2.LabelAppConfigNamespace
	LabelAppConfigName      = v1alpha2.LabelAppConfigName
)

// ApplyOnceOnly is the hub's --apply-once-only mode: the strategy rendered objects are applied with.
type ApplyOnceOnly string

const (
	ApplyOnceOff   ApplyOnceOnly = "off"
	ApplyOnceOn    ApplyOnceOnly = "on"
	ApplyOnceForce ApplyOnceOnly = "force"
)

// defaultStrategy is the update strategy rendered objects get in a mode.
func (m ApplyOnceOnly) defaultStrategy() workv1.UpdateStrategyType {
	switch m {
	case ApplyOnceOn:
		return "ApplyOnce"
	case ApplyOnceForce:
		return "ApplyOnceForce"
	}
	return workv1.UpdateStrategyTypeUpdate
}

// ManifestWorkName is the name of the ManifestWork delivering an AppConfig to a cluster: AppConfigs of
// different hub namespaces may share a name, so the namespace is part of it.
func ManifestWorkName(app *v1alpha2.ApplicationConfiguration) string {
	return v1alpha2.ManifestWorkName(app.Namespace, app.Name)
}

// BuildManifestWork is the ManifestWork delivering the rendered components of app to cluster: every
// workload followed by its traits, each with its update strategy, and WellKnownStatus feedback for the
// workloads, under the AppConfig's executor. A manifest's resource name (which manifestConfigs identify it by) is guessed from its
// kind when the hub cannot map it.
func BuildManifestWork(app *v1alpha2.ApplicationConfiguration, cluster string, rendered []RenderedComponent, mode ApplyOnceOnly, mapper meta.RESTMapper) (*workv1.ManifestWork, error) {
	mw := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ManifestWorkName(app),
			Namespace: cluster,
			Labels:    map[string]string{LabelAppConfigNamespace: app.Namespace, LabelAppConfigName: app.Name},
		},
	}
	if e := app.Spec.Executor; e != nil {
		mw.Spec.Executor = &workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{Type: workv1.ManifestWorkExecutorSubjectType(e.Subject.Type)}}
		if sa := e.Subject.ServiceAccount; sa != nil {
			mw.Spec.Executor.Subject.ServiceAccount = &workv1.ManifestWorkSubjectServiceAccount{Namespace: sa.Namespace, Name: sa.Name}
		}
	}
	add := func(obj *unstructured.Unstructured, strategy v1alpha2.UpdateStrategy, feedback bool) error {
		raw, err := json.Marshal(obj.Object)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		mw.Spec.Workload.Manifests = append(mw.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
		typ := mode.defaultStrategy()
		if strategy != "" {
			typ = workv1.UpdateStrategyType(strategy)
		}
		cfg := workv1.ManifestConfigOption{
			ResourceIdentifier: workv1.ResourceIdentifier{
				Group:     obj.GroupVersionKind().Group,
				Resource:  resourceOf(obj, mapper),
				Name:      obj.GetName(),
				Namespace: obj.GetNamespace(),
			},
			UpdateStrategy: &workv1.UpdateStrategy{Type: typ},
		}
		if feedback {
			cfg.FeedbackRules = []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}}
		}
		mw.Spec.ManifestConfigs = append(mw.Spec.ManifestConfigs, cfg)
		return nil
	}
	var largest string
	largestSize := 0
	for _, rc := range rendered {
		first := len(mw.Spec.Workload.Manifests)
		if err := add(rc.Workload, rc.WorkloadStrategy, true); err != nil {
			return nil, err
		}
		for i, t := range rc.Traits {
			if err := add(t, rc.TraitStrategies[i], false); err != nil {
				return nil, err
			}
		}
		if size := manifestsSize(mw.Spec.Workload.Manifests[first:]); size > largestSize {
			largest, largestSize = rc.ComponentName, size
		}
	}
	if len(mw.Spec.Workload.Manifests) == 0 {
		return nil, &RenderError{Reason: "NothingToDeliver", Message: "the AppConfig renders no object, and a ManifestWork must hold at least one " +
			"(OCM's hub refuses an empty one): give it a component, or delete it to remove the application from its clusters"}
	}
	if size := manifestsSize(mw.Spec.Workload.Manifests); size > MaxManifestsSize {
		return nil, &RenderError{Component: largest, Reason: "ManifestsTooLarge", Message: fmt.Sprintf(
			"the rendered manifests take %d KiB, over the %d KiB a ManifestWork may hold (OCM's limit), of which this component's %d KiB: "+
				"split the application into smaller AppConfigs", size/1024, MaxManifestsSize/1024, largestSize/1024)}
	}
	return mw, nil
}

// MaxManifestsSize is the most a ManifestWork's manifests may take, in bytes of their protobuf encoding:
// OCM's work webhook refuses a larger work, and ferry-hub renders none.
const MaxManifestsSize = 500 * 1024

// manifestsSize is the manifests' size as OCM's work webhook counts it: the protobuf size of each.
func manifestsSize(manifests []workv1.Manifest) int {
	size := 0
	for i := range manifests {
		size += manifests[i].Size()
	}
	return size
}

// resourceOf maps an object's kind to its resource name, through mapper when it knows the kind.
func resourceOf(obj *unstructured.Unstructured, mapper meta.RESTMapper) string {
	gvk := obj.GroupVersionKind()
	if mapper != nil {
		if m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			return m.Resource.Resource
		}
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.Resource
}

// clusterScopedIn is RenderInput.ClusterScoped through mapper: a kind it maps to a resource outside
// namespaces. A kind it cannot map (not served on the hub) is not known to be cluster-scoped.
func clusterScopedIn(mapper meta.RESTMapper) func(schema.GroupVersionKind) bool {
	return func(gvk schema.GroupVersionKind) bool {
		if mapper == nil {
			return false
		}
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		return err == nil && m.Scope.Name() == meta.RESTScopeNameRoot
	}
}

// KeepEarlierRevisions carries into want the workloads of earlier revisions that have stayed in have, the
// ManifestWork delivered so far, for every component whose traits are revisionEnabled (a rollout trait): moving
// to <comp>-v2 adds its workload beside <comp>-v1's instead of replacing it. A revision-enabled trait
// (a rollout) moves traffic between them; the hub retires the oldest once more than kept earlier ones
// are left, so that a work does not grow with every revision.
func KeepEarlierRevisions(want, have *workv1.ManifestWork, rendered []RenderedComponent, kept int) error {
	if have == nil {
		return nil
	}
	current := map[string]string{} // component → the revision rendered now, for revision-enabled ones
	for _, rc := range rendered {
		if rc.RevisionEnabled {
			current[rc.ComponentName] = rc.RevisionName
		}
	}
	if len(current) == 0 {
		return nil
	}
	type earlier struct {
		component string
		revision  int64
		manifest  workv1.Manifest
		configs   []workv1.ManifestConfigOption
	}
	var found []earlier
	for i, m := range have.Spec.Workload.Manifests {
		obj := &unstructured.Unstructured{}
		if err := json.Unmarshal(m.Raw, &obj.Object); err != nil {
			return fmt.Errorf("decode manifest %d of ManifestWork %s/%s: %w", i, have.Namespace, have.Name, err)
		}
		labels := obj.GetLabels()
		component := labels[LabelComponent]
		rev, ok := current[component]
		if !ok || labels[LabelResourceType] != ResourceTypeWorkload || labels[LabelRevision] == rev {
			continue
		}
		e := earlier{component: component, revision: revisionNumber(labels[LabelRevision]), manifest: m}
		for _, cfg := range have.Spec.ManifestConfigs {
			if cfg.ResourceIdentifier.Name == obj.GetName() && cfg.ResourceIdentifier.Namespace == obj.GetNamespace() &&
				cfg.ResourceIdentifier.Group == obj.GroupVersionKind().Group {
				e.configs = append(e.configs, cfg)
			}
		}
		found = append(found, e)
	}
	// Newest first, so that each component keeps its most recent earlier revisions; the work's order
	// stays the order they were delivered in.
	newest := slices.Clone(found)
	slices.SortStableFunc(newest, func(a, b earlier) int { return cmp.Compare(b.revision, a.revision) })
	type key struct {
		component string
		revision  int64
	}
	keep := map[key]bool{}
	perComponent := map[string]int{}
	for _, e := range newest {
		if perComponent[e.component] < kept {
			perComponent[e.component]++
			keep[key{e.component, e.revision}] = true
		}
	}
	for _, e := range found {
		if keep[key{e.component, e.revision}] {
			want.Spec.Workload.Manifests = append(want.Spec.Workload.Manifests, e.manifest)
			for _, cfg := range e.configs {
				// The trait owns an earlier revision's workload now: it scales it down and deletes it,
				// and the agent must neither undo that nor re-create it.
				cfg.UpdateStrategy = &workv1.UpdateStrategy{Type: ApplyOnceForce.defaultStrategy()}
				want.Spec.ManifestConfigs = append(want.Spec.ManifestConfigs, cfg)
			}
		}
	}
	return nil
}

// revisionNumber is N of a revision name <component>-v<N>, 0 when it is not one.
func revisionNumber(name string) int64 {
	i := strings.LastIndex(name, "-v")
	if i < 0 {
		return 0
	}
	n, _ := strconv.ParseInt(name[i+2:], 10, 64)
	return n
}

// appConfigOfWorkName is the AppConfig whose ManifestWorks have this name (see ManifestWorkName), if
// it is such a name. A namespace has no dots, so the first dot ends it.
func appConfigOfWorkName(name string) (types.NamespacedName, bool) {
	ns, app, ok := strings.Cut(name, ".")
	return types.NamespacedName{Namespace: ns, Name: app}, ok && ns != "" && app != ""
}
