package hub

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/apprevision"
	"github.com/ferry-mc/ferry/pkg/override"
	"github.com/ferry-mc/ferry/pkg/render"
)

// An application revision is what the hub renders for an AppConfig before any cluster is known — the
// spec of its ManifestWorks, and the overrides that change it for some clusters — recorded as a
// ControllerRevision of the AppConfig, so that a rollout can deliver an earlier one again exactly,
// without rendering it again from Components that have changed since. It is identified by a hash (the
// spec's, AnnotationSpecHash, when it has no overrides; with them, of both, AnnotationRevisionHash) which
// every work of it carries, and named <appconfig>-<hash>. One cluster's work is a pure function of the
// revision and that cluster's facts (clusterWorks).
const (
	// LabelAppRevisionHash, on an application revision, is its hash.
	LabelAppRevisionHash = apprevision.LabelHash
	// AppRevisionsKept is how many application revisions are kept besides the stable and the wanted one.
	AppRevisionsKept = 10
)

// revisionBase is one revision of the application as deliver writes it.
type revisionBase struct {
	// Name of the application revision (the ControllerRevision).
	Name string
	// Work is the ManifestWork of every cluster, its AnnotationSpecHash set, with no namespace.
	Work *workv1.ManifestWork
	// Rendered are the components whose earlier revisions the works keep; only their names, revisions
	// and RevisionEnabled are set for a revision read back.
	Rendered []render.Component
	// Overrides change Work for the clusters they select (clusterWorks), as the revision records them
	// (render.Overrides), with what those of components need.
	Overrides  []v1alpha2.Override
	Components *override.Components
	// RevisionHash identifies a revision with overrides; without, its Work's spec hash does.
	RevisionHash string
}

// hash is the revision's hash, which identifies it on the works.
func (b *revisionBase) hash() string {
	return cmp.Or(b.RevisionHash, b.Work.Annotations[AnnotationSpecHash])
}

// revisionHash is the hash of a revision whose works' spec hashes specHash, changed by overrides, which
// need comps of its components.
func revisionHash(specHashOfWork string, overrides []v1alpha2.Override, comps *override.Components) (string, error) {
	if len(overrides) == 0 {
		return specHashOfWork, nil
	}
	raw, err := json.Marshal(overrides)
	if err != nil {
		return "", fmt.Errorf("encode overrides: %w", err)
	}
	if comps != nil {
		c, err := json.Marshal(comps)
		if err != nil {
			return "", fmt.Errorf("encode what overrides need of components: %w", err)
		}
		raw = append(append(raw, '\n'), c...)
	}
	return render.SpecHash(append([]byte(specHashOfWork+"\n"), raw...)), nil
}

// AppRevisionName is the name of the application revision of app whose works' spec hash is hash.
func AppRevisionName(app *v1alpha2.ApplicationConfiguration, hash string) string {
	suffix := "-" + hash[:min(len(hash), 10)]
	return app.Name[:min(len(app.Name), 253-len(suffix))] + suffix
}

// buildRevisionBase is the ManifestWork every cluster of app gets for rendered, with its spec hash.
func buildRevisionBase(app *v1alpha2.ApplicationConfiguration, rendered []render.Component, overrides []v1alpha2.Override, comps *override.Components,
	mode render.ApplyOnceOnly, mapper meta.RESTMapper) (*revisionBase, error) {
	base, err := render.BuildManifestWork(app, "", rendered, mode, mapper)
	if err != nil {
		return nil, err
	}
	if err := render.SetSpecHash(base, app.Generation); err != nil {
		return nil, err
	}
	rev, err := revisionHash(base.Annotations[AnnotationSpecHash], overrides, comps)
	if err != nil {
		return nil, err
	}
	out := &revisionBase{Name: AppRevisionName(app, rev), Work: base, Rendered: rendered}
	if len(overrides) > 0 {
		out.Overrides, out.Components, out.RevisionHash = overrides, comps, rev
	}
	return out, nil
}

// buildAppRevision is revision number n of app, holding base.
func buildAppRevision(app *v1alpha2.ApplicationConfiguration, base *revisionBase, n int64) (*appsv1.ControllerRevision, error) {
	data := apprevision.Data{Spec: base.Work.Spec}
	if len(base.Overrides) > 0 {
		data.Overrides, data.Components, data.SpecHash = base.Overrides, base.Components, base.Work.Annotations[AnnotationSpecHash]
	}
	for _, rc := range base.Rendered {
		if rc.RevisionEnabled {
			if data.RevisionEnabled == nil {
				data.RevisionEnabled = map[string]string{}
			}
			data.RevisionEnabled[rc.ComponentName] = rc.RevisionName
		}
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("encode application revision %s: %w", base.Name, err)
	}
	yes := true
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: base.Name, Namespace: app.Namespace,
			Labels: map[string]string{LabelAppConfigNamespace: app.Namespace, LabelAppConfigName: app.Name, LabelAppRevisionHash: base.hash()},
			// Not a controller reference: the AppConfig does not reconcile its revisions as it would
			// objects it controls; it only takes them with it when it is deleted.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha2.SchemeGroupVersion.String(), Kind: "ApplicationConfiguration",
				Name: app.Name, UID: app.UID, BlockOwnerDeletion: &yes}},
		},
		Data:     runtime.RawExtension{Raw: raw},
		Revision: n,
	}, nil
}

// appRevisions lists app's revisions, oldest first.
func (r *AppConfigReconciler) appRevisions(ctx context.Context, app *v1alpha2.ApplicationConfiguration) ([]appsv1.ControllerRevision, error) {
	list := &appsv1.ControllerRevisionList{}
	if err := r.Client.List(ctx, list, client.InNamespace(app.Namespace),
		client.MatchingLabels{LabelAppConfigNamespace: app.Namespace, LabelAppConfigName: app.Name}); err != nil {
		return nil, fmt.Errorf("list revisions of AppConfig %s: %w", app.Name, err)
	}
	return sortRevisions(list.Items), nil
}

// recordAppRevision makes sure base is recorded as a revision of app, numbered after the others when
// it is new, and prunes the oldest beyond AppRevisionsKept, keeping those named in keep.
func (r *AppConfigReconciler) recordAppRevision(ctx context.Context, app *v1alpha2.ApplicationConfiguration, base *revisionBase, keep ...string) error {
	recorded := &appsv1.ControllerRevision{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: app.Namespace, Name: base.Name}, recorded); err == nil &&
		recorded.Labels[LabelAppRevisionHash] == base.hash() {
		return nil // the steady state: one read of the cache
	}
	revs, err := r.appRevisions(ctx, app)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(revs, func(rev appsv1.ControllerRevision) bool { return rev.Name == base.Name }) {
		rev, err := buildAppRevision(app, base, nextRevision(revs))
		if err != nil {
			return err
		}
		if err := r.Client.Create(ctx, rev); err != nil && !apierrors.IsAlreadyExists(err) {
			// AlreadyExists: recorded since the cache was read.
			return fmt.Errorf("record application revision %s: %w", rev.Name, err)
		}
		revs = append(revs, *rev)
	}
	keep = append(keep, base.Name)
	var prunable []*appsv1.ControllerRevision
	for i := range revs {
		if !slices.Contains(keep, revs[i].Name) {
			prunable = append(prunable, &revs[i])
		}
	}
	for _, rev := range prunable[:max(0, len(prunable)-AppRevisionsKept)] {
		if err := r.Client.Delete(ctx, rev, client.Preconditions{UID: &rev.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("prune application revision %s: %w", rev.Name, err)
		}
	}
	return nil
}

// loadAppRevision reads the application revision name of app back, or nil when there is none.
func (r *AppConfigReconciler) loadAppRevision(ctx context.Context, app *v1alpha2.ApplicationConfiguration, name string) (*revisionBase, error) {
	rev := &appsv1.ControllerRevision{}
	key := types.NamespacedName{Namespace: app.Namespace, Name: name}
	err := r.Client.Get(ctx, key, rev)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, rev) // recorded moments ago, not in the cache yet
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read application revision %s: %w", name, err)
	}
	if rev.Labels[LabelAppConfigName] != app.Name || rev.Labels[LabelAppConfigNamespace] != app.Namespace {
		return nil, fmt.Errorf("ControllerRevision %s/%s is not a revision of AppConfig %s", app.Namespace, name, app.Name)
	}
	data, err := apprevision.Decode(rev)
	if err != nil {
		return nil, err
	}
	base := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: ManifestWorkName(app),
			Labels:      map[string]string{LabelAppConfigNamespace: app.Namespace, LabelAppConfigName: app.Name},
			Annotations: map[string]string{AnnotationSpecHash: cmp.Or(data.SpecHash, rev.Labels[LabelAppRevisionHash])}},
		Spec: data.Spec,
	}
	out := &revisionBase{Name: name, Work: base}
	if len(data.Overrides) > 0 {
		out.Overrides, out.Components, out.RevisionHash = data.Overrides, data.Components, rev.Labels[LabelAppRevisionHash]
	}
	for _, component := range slices.Sorted(maps.Keys(data.RevisionEnabled)) {
		out.Rendered = append(out.Rendered, render.Component{ComponentName: component, RevisionName: data.RevisionEnabled[component], RevisionEnabled: true})
	}
	return out, nil
}
