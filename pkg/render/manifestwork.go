package render

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
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
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// ApplyOnceOnly is the hub's --apply-once-only mode: the strategy rendered objects are applied with.
type ApplyOnceOnly string

const (
	ApplyOnceOff   ApplyOnceOnly = "off"
	ApplyOnceOn    ApplyOnceOnly = "on"
	ApplyOnceForce ApplyOnceOnly = "force"
)

// DefaultStrategy is the update strategy rendered objects get in a mode.
func (m ApplyOnceOnly) DefaultStrategy() workv1.UpdateStrategyType {
	switch m {
	case ApplyOnceOn:
		return "ApplyOnce"
	case ApplyOnceForce:
		return "ApplyOnceForce"
	}
	return workv1.UpdateStrategyTypeUpdate
}

// BuildManifestWork is the ManifestWork delivering the rendered components of app to cluster: every
// workload followed by its traits, each with its update strategy, and WellKnownStatus feedback for the
// workloads, under the AppConfig's executor. A manifest's resource name (which manifestConfigs identify it by) is guessed from its
// kind when the hub cannot map it.
func BuildManifestWork(app *v1alpha2.ApplicationConfiguration, cluster string, rendered []Component, mode ApplyOnceOnly, mapper meta.RESTMapper) (*workv1.ManifestWork, error) {
	mw := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{
			Name:      v1alpha2.ManifestWorkName(app.Namespace, app.Name),
			Namespace: cluster,
			Labels:    map[string]string{v1alpha2.LabelAppConfigNamespace: app.Namespace, v1alpha2.LabelAppConfigName: app.Name},
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
		typ := mode.DefaultStrategy()
		if strategy != "" {
			typ = workv1.UpdateStrategyType(strategy)
		}
		cfg := workv1.ManifestConfigOption{
			ResourceIdentifier: workv1.ResourceIdentifier{
				Group:     obj.GroupVersionKind().Group,
				Resource:  ResourceOf(obj, mapper),
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
		return nil, &Error{Reason: "NothingToDeliver", Message: "the AppConfig renders no object, and a ManifestWork must hold at least one " +
			"(OCM's hub refuses an empty one): give it a component, or delete it to remove the application from its clusters"}
	}
	if size := manifestsSize(mw.Spec.Workload.Manifests); size > MaxManifestsSize {
		return nil, &Error{Component: largest, Reason: "ManifestsTooLarge", Message: fmt.Sprintf(
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

// ResourceOf maps an object's kind to its resource name, through mapper when it knows the kind.
func ResourceOf(obj *unstructured.Unstructured, mapper meta.RESTMapper) string {
	gvk := obj.GroupVersionKind()
	if mapper != nil {
		if m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			return m.Resource.Resource
		}
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.Resource
}

// ClusterScopedIn is Input.ClusterScoped through mapper: a kind it maps to a resource outside
// namespaces. A kind it cannot map (not served on the hub) is not known to be cluster-scoped.
func ClusterScopedIn(mapper meta.RESTMapper) func(schema.GroupVersionKind) bool {
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
func KeepEarlierRevisions(want, have *workv1.ManifestWork, rendered []Component, kept int) error {
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
		component := labels[v1alpha2.LabelComponent]
		rev, ok := current[component]
		if !ok || labels[v1alpha2.LabelResourceType] != v1alpha2.ResourceTypeWorkload || labels[v1alpha2.LabelRevision] == rev {
			continue
		}
		e := earlier{component: component, revision: RevisionNumber(labels[v1alpha2.LabelRevision]), manifest: m}
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
				cfg.UpdateStrategy = &workv1.UpdateStrategy{Type: ApplyOnceForce.DefaultStrategy()}
				want.Spec.ManifestConfigs = append(want.Spec.ManifestConfigs, cfg)
			}
		}
	}
	return nil
}

// RevisionNumber is N of a revision name <component>-v<N>, 0 when it is not one.
func RevisionNumber(name string) int64 {
	i := strings.LastIndex(name, "-v")
	if i < 0 {
		return 0
	}
	n, _ := strconv.ParseInt(name[i+2:], 10, 64)
	return n
}

// The stamp is delivered with the next revision that changes something.
func SetSpecHash(mw *workv1.ManifestWork, generation int64) error {
	spec, err := json.Marshal(mw.Spec)
	if err != nil {
		return fmt.Errorf("encode ManifestWork %s/%s: %w", mw.Namespace, mw.Name, err)
	}
	// Every manifest is a JSON object encoded with sorted keys (BuildManifestWork): the stamp is this
	// exact run of bytes.
	stamp := fmt.Sprintf(`%q:%q`, v1alpha2.AnnotationAppGen, strconv.FormatInt(generation, 10))
	spec = bytes.ReplaceAll(spec, []byte(stamp), []byte(fmt.Sprintf(`%q:""`, v1alpha2.AnnotationAppGen)))
	metav1.SetMetaDataAnnotation(&mw.ObjectMeta, v1alpha2.AnnotationSpecHash, SpecHash(spec))
	return nil
}

// SpecHash identifies encoded bytes of a spec: a ManifestWork's (SetSpecHash), a ComponentSpec's.
func SpecHash(spec []byte) string {
	sum := sha256.Sum256(spec)
	return hex.EncodeToString(sum[:10])
}
