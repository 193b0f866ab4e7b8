package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/render"
)

const (
	// ComponentLabel names, on a ControllerRevision, the Component it is a revision of.
	ComponentLabel = v1alpha2.LabelRevisionOfComponent
	// PatchedLabel marks a revision holding the component's spec with an AppConfig's patches merged
	// (patch traits), rather than the component's own spec.
	PatchedLabel = "ferry.io/patched-from"
	// specHashLabel identifies the spec a revision holds, so that an unchanged spec makes no revision.
	specHashLabel = v1alpha2.LabelComponentSpecHash
	// DefaultRevisionsKept is how many revisions of a Component are kept besides the latest and those
	// an AppConfig pins.
	DefaultRevisionsKept = 10
)

// RevisionReconciler records every change of a Component's spec as a ControllerRevision named
// <component>-v<N>, N increasing, and points status.latestRevision at the newest. Old revisions beyond
// RevisionsKept are pruned, except those an ApplicationConfiguration pins with revisionName.
type RevisionReconciler struct {
	Client        client.Client
	Scheme        *runtime.Scheme
	RevisionsKept int
	// Shard is which Components this hub records revisions of; the zero value is all of them.
	Shard Shard
}

// SetupWithManager registers the reconciler.
func (r *RevisionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("component-revisions").
		For(&v1alpha2.Component{}).
		Owns(&appsv1.ControllerRevision{}).
		Complete(r)
}

// Reconcile implements reconcile.Reconciler.
func (r *RevisionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if !r.Shard.ownsObject(req.NamespacedName) {
		return ctrl.Result{}, nil // another shard numbers its revisions
	}
	comp := &v1alpha2.Component{}
	if err := r.Client.Get(ctx, req.NamespacedName, comp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	revs, err := r.revisions(ctx, comp)
	if err != nil {
		return ctrl.Result{}, err
	}
	spec, err := json.Marshal(comp.Spec)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("encode spec of component %s: %w", comp.Name, err)
	}
	hash := render.SpecHash(spec)

	// The latest revision of the component's own spec: revisions made by patch traits are numbered in
	// the same sequence but are not what componentName resolves to.
	var latest *appsv1.ControllerRevision
	for i := len(revs) - 1; i >= 0; i-- {
		if revs[i].Labels[PatchedLabel] == "" {
			latest = &revs[i]
			break
		}
	}
	if latest == nil || latest.Labels[specHashLabel] != hash {
		rev, err := newRevision(comp, revs, spec, r.Scheme)
		if err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Client.Create(ctx, rev); err != nil {
			if apierrors.IsAlreadyExists(err) {
				// The cache has not seen a revision made since: look again when it has.
				return ctrl.Result{Requeue: true}, nil
			}
			return ctrl.Result{}, fmt.Errorf("create revision %s: %w", rev.Name, err)
		}
		revs = append(revs, *rev)
		latest = rev
	}

	if s := comp.Status.LatestRevision; s == nil || s.Name != latest.Name || s.Revision != latest.Revision ||
		comp.Status.ObservedGeneration != comp.Generation {
		patch := client.MergeFrom(comp.DeepCopy())
		comp.Status.LatestRevision = &v1alpha2.Revision{Name: latest.Name, Revision: latest.Revision}
		comp.Status.ObservedGeneration = comp.Generation
		if err := r.Client.Status().Patch(ctx, comp, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("update status of component %s: %w", comp.Name, err)
		}
	}
	return ctrl.Result{}, r.prune(ctx, comp, revs, latest.Name)
}

// newRevision is the next revision of comp, after revs (oldest first), holding spec.
func newRevision(comp *v1alpha2.Component, revs []appsv1.ControllerRevision, spec []byte, scheme *runtime.Scheme) (*appsv1.ControllerRevision, error) {
	return revisionOf(comp, nextRevision(revs), spec, scheme)
}

// nextRevision is the number of the revision after revs (oldest first).
func nextRevision(revs []appsv1.ControllerRevision) int64 {
	if len(revs) == 0 {
		return 1
	}
	return revs[len(revs)-1].Revision + 1
}

// revisionOf is revision n of comp, holding spec.
func revisionOf(comp *v1alpha2.Component, n int64, spec []byte, scheme *runtime.Scheme) (*appsv1.ControllerRevision, error) {
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:      RevisionName(comp.Name, n),
			Namespace: comp.Namespace,
			Labels:    map[string]string{ComponentLabel: comp.Name, specHashLabel: render.SpecHash(spec)},
		},
		Data:     runtime.RawExtension{Raw: spec},
		Revision: n,
	}
	if err := controllerutil.SetControllerReference(comp, rev, scheme); err != nil {
		return nil, err
	}
	return rev, nil
}

// RevisionName is the name of revision n of a component.
func RevisionName(component string, n int64) string { return fmt.Sprintf("%s-v%d", component, n) }

// revisions lists the component's revisions, oldest first.
func (r *RevisionReconciler) revisions(ctx context.Context, comp *v1alpha2.Component) ([]appsv1.ControllerRevision, error) {
	list := &appsv1.ControllerRevisionList{}
	if err := r.Client.List(ctx, list, client.InNamespace(comp.Namespace), client.MatchingLabels{ComponentLabel: comp.Name}); err != nil {
		return nil, fmt.Errorf("list revisions of component %s: %w", comp.Name, err)
	}
	return sortRevisions(list.Items), nil
}

// sortRevisions sorts revisions oldest first.
func sortRevisions(revs []appsv1.ControllerRevision) []appsv1.ControllerRevision {
	sort.Slice(revs, func(i, j int) bool { return revs[i].Revision < revs[j].Revision })
	return revs
}

// prune deletes the oldest revisions beyond RevisionsKept, not counting the newest, the latest of the
// component's own spec, and those an AppConfig pins or renders now, which stay.
func (r *RevisionReconciler) prune(ctx context.Context, comp *v1alpha2.Component, revs []appsv1.ControllerRevision, latest string) error {
	kept := r.RevisionsKept
	if kept <= 0 {
		kept = DefaultRevisionsKept
	}
	if len(revs)-1 <= kept {
		return nil // nothing to prune, whatever is pinned
	}
	apps := &v1alpha2.ApplicationConfigurationList{}
	if err := r.Client.List(ctx, apps, client.InNamespace(comp.Namespace)); err != nil {
		return fmt.Errorf("list application configurations: %w", err)
	}
	pinned := map[string]bool{latest: true}
	for _, app := range apps.Items {
		for _, c := range app.Spec.Components {
			if c.RevisionName != "" {
				pinned[c.RevisionName] = true
			}
		}
		for _, w := range app.Status.Workloads {
			pinned[w.ComponentRevisionName] = true
		}
	}
	var prunable []*appsv1.ControllerRevision // oldest first, the newest excluded
	for i := range revs[:len(revs)-1] {
		if !pinned[revs[i].Name] {
			prunable = append(prunable, &revs[i])
		}
	}
	for _, rev := range prunable[:max(0, len(prunable)-kept)] {
		if err := r.Client.Delete(ctx, rev); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("prune revision %s: %w", rev.Name, err)
		}
	}
	return nil
}
