package hub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/render"
)

const (
	// DefaultWorkers is how many AppConfigs the hub reconciles at once: rendering is cheap, and each
	// reconcile waits mostly on API round trips (ManifestWorks, status).
	DefaultWorkers = 10
	// DefaultEarlierRevisionsKept is how many earlier revisions' workloads stay beside the current one
	// for a revision-enabled trait: enough for a rollout in progress when one more revision comes.
	DefaultEarlierRevisionsKept = 2
	// AnnotationSpecHash, on a ManifestWork, identifies the spec the hub last wrote into it.
	AnnotationSpecHash = v1alpha2.AnnotationSpecHash
	// AnnotationRevisionHash, on a ManifestWork, identifies the revision it carries when that is not its
	// spec hash (overrides changed it, or may for other clusters).
	AnnotationRevisionHash = v1alpha2.AnnotationRevisionHash
	// AppConfigFinalizer holds an AppConfig until its ManifestWorks are gone.
	AppConfigFinalizer = "ferry.io/appconfig-cleanup"
	// ConditionReady says whether the AppConfig is rendered and delivered to its clusters.
	ConditionReady = v1alpha2.ConditionReady
)

// AppConfigReconciler delivers ApplicationConfigurations: it renders them, writes one ManifestWork per
// target cluster, removes the ManifestWorks of clusters that left the placement, and folds the
// ManifestWorks' status back into the AppConfig.
type AppConfigReconciler struct {
	Client        client.Client
	Mapper        meta.RESTMapper
	ApplyOnceOnly render.ApplyOnceOnly
	// Workers is how many AppConfigs are reconciled at once; 0 means DefaultWorkers.
	Workers int
	// EarlierRevisionsKept is how many earlier revisions' workloads of a component with a
	// revision-enabled trait stay delivered beside the current one; 0 means DefaultEarlierRevisionsKept.
	EarlierRevisionsKept int
	// APIReader reads what the hub does not cache: the ConfigMaps holding patch traits' patches.
	// Defaults to the manager's.
	APIReader client.Reader
	// Recorder records events on AppConfigs. Defaults to the manager's.
	Recorder events.EventRecorder
	// Shard is which AppConfigs this hub delivers; the zero value is all of them.
	Shard Shard
	// ReportBatch is how long agents' status reports are gathered before the AppConfig is
	// reconciled for them; 0 means DefaultReportBatch.
	ReportBatch time.Duration
	// ClusterSetBindings is how placements are held to the ManagedClusterSets bound to the AppConfig's
	// namespace; empty means ClusterSetBindingsEnforce.
	ClusterSetBindings ClusterSetBindings

	// Patch-trait kinds are known only once an AppConfig uses them: each gets a watch then.
	controller controller.Controller
	cache      cache.Cache
	byLabels   handler.EventHandler
	watched    sync.Map // schema.GroupVersionKind → true
	// The cache's own works (indexed by AppConfig) and ManagedClusters, read without a List's copies.
	cachedWorks cachedObjects[*workv1.ManifestWork]
	clusters    ClusterLister
	// What the last delivery passes found complete, to skip the passes a status report does not need.
	upToDate upToDateDeliveries
	// The works and previews this hub wrote moments ago, which the cache may not show yet.
	recentWrites, recentPreviews recentWorkWrites
	// blockedPreviews are the works of a preview's name Ferry did not write, which it neither adopts
	// nor overwrites, each with the AppConfig whose preview it blocks (a types.NamespacedName).
	blockedPreviews sync.Map
	// writtenStatuses are the AppConfig statuses this hub wrote that its cache may not show yet.
	writtenStatuses writtenStatuses
	// The summary of every work of the AppConfigs of this shard, taken as the works change.
	summaries *workSummaries
}

// SetupWithManager registers the reconciler. ManifestWorks live in cluster namespaces, where an owner
// reference to the AppConfig cannot point: they are mapped back by their labels.
func (r *AppConfigReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := r.setUpCache(mgr); err != nil {
		return err
	}
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("appconfigs").
		For(&v1alpha2.ApplicationConfiguration{}, builder.WithPredicates(appConfigChanged)).
		Watches(&v1alpha2.ApplicationConfiguration{}, statusWritten(cmp.Or(r.ReportBatch, DefaultReportBatch))).
		Watches(&workv1.ManifestWork{}, batchedReports{appConfigsOf: r.appConfigsOfWork, reportBatch: cmp.Or(r.ReportBatch, DefaultReportBatch),
			changed: r.upToDate.changed, observe: r.observeWork}).
		Watches(&v1alpha2.Component{}, r.appConfigsOf(inItsNamespace)).
		// Only a cluster's labels and its coming and going change a placement; its status does not.
		Watches(&managedCluster{}, r.appConfigsOf(everywhere), builder.WithPredicates(predicate.Or(placementChanged, clusterFactsChanged))).
		Watches(&placementDecision{}, r.appConfigsOf(inItsNamespace)).
		// What an AppConfig may reach: a binding moves its namespace's AppConfigs, a set any of them.
		Watches(&clusterv1beta2.ManagedClusterSetBinding{}, r.appConfigsOf(inItsNamespace), builder.WithPredicates(bindingChanged)).
		Watches(&clusterv1beta2.ManagedClusterSet{}, r.appConfigsOf(everywhere), builder.WithPredicates(bindingChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(r.Workers, DefaultWorkers)}).
		Build(r)
	r.controller = c
	return err
}

// setUpCache gives the reconciler what it reads besides its client: the manager's API reader, event
// recorder and cache, the cache's works indexed by AppConfig and its ManagedClusters, and the verdicts
// on the works, which the work events feed.
func (r *AppConfigReconciler) setUpCache(mgr ctrl.Manager) error {
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("ferry-hub")
	}
	r.cache = mgr.GetCache()
	// An AppConfig's ManifestWorks by an index, not by filtering every work in the cache by label.
	var err error
	r.cachedWorks, err = cachedObjectsOf(context.Background(), r.cache, &workv1.ManifestWork{}, toolscache.Indexers{
		workIndex: func(o any) ([]string, error) {
			if obj, ok := o.(client.Object); ok {
				if app, ok := appConfigOfLabels(obj); ok {
					return []string{app.String()}, nil
				}
			}
			return nil, nil
		},
		previewIndex: func(o any) ([]string, error) {
			if obj, ok := o.(client.Object); ok {
				if app, ok := previewOfLabels(obj); ok {
					return []string{app.String()}, nil
				}
			}
			return nil, nil
		},
	})
	if err != nil {
		return err
	}
	cachedClusters, err := cachedObjectsOf(context.Background(), r.cache, &managedCluster{}, nil)
	if err != nil {
		return err
	}
	r.clusters = func(context.Context) ([]*clusterv1.ManagedCluster, error) { return cachedClusters.all() }
	r.byLabels = handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if app, ok := appConfigOfLabels(o); ok {
			return []reconcile.Request{{NamespacedName: app}}
		}
		return nil
	})
	r.summaries = newWorkSummaries(r.Shard.ownsObject)
	return nil
}

// observeWork takes in every ManifestWork created (old nil), updated or deleted (updated nil), before
// its AppConfigs are enqueued: the summaries count its report, and a deleted work is no longer one of
// the hub's recent writes the cache has yet to show.
func (r *AppConfigReconciler) observeWork(old, updated client.Object) {
	r.summaries.observe(old, updated)
	if updated == nil && old != nil {
		if app, ok := appConfigOfLabels(old); ok {
			r.recentWrites.deleted(app, client.ObjectKeyFromObject(old), old.GetUID())
		}
		if app, ok := previewOfLabels(old); ok {
			r.recentPreviews.deleted(app, client.ObjectKeyFromObject(old), old.GetUID())
		}
	}
}

// appConfigsOfWork are the AppConfigs a ManifestWork's event concerns: the one its labels name (as the
// AppConfig it delivers, or the one it previews), and the one its name is of. A work of an AppConfig's
// name that Ferry did not write for it blocks the AppConfig's delivery to that cluster, and the index
// does not see it: its name finds the AppConfig, so that deleting or relabelling it brings the
// AppConfig back at once. A preview's name cannot be read back (it ends in a hash): a work of that
// name in a preview's way is found among blockedPreviews.
func (r *AppConfigReconciler) appConfigsOfWork(_ context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	labelled, ok := appConfigOfLabels(o)
	if ok {
		out = append(out, reconcile.Request{NamespacedName: labelled})
	}
	if named, ok := appConfigOfWorkName(o.GetName()); ok && named != labelled {
		out = append(out, reconcile.Request{NamespacedName: named})
	}
	if previewed, ok := previewOfLabels(o); ok {
		out = append(out, reconcile.Request{NamespacedName: previewed})
	} else if blocked, ok := r.blockedPreviews.Load(client.ObjectKeyFromObject(o)); ok {
		out = append(out, reconcile.Request{NamespacedName: blocked.(types.NamespacedName)})
	}
	return out
}

// Which AppConfigs an object's change concerns: those of its namespace, or all of them.
const (
	inItsNamespace = false
	everywhere     = true
)

// appConfigsOf enqueues, for a change of a cluster's labels, a PlacementDecision, a Component or what
// binds clusters to namespaces, the AppConfigs of the object's namespace (or all of them), and has their
// delivery passes look again.
func (r *AppConfigReconciler) appConfigsOf(all bool) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		r.upToDate.changed()
		apps := &v1alpha2.ApplicationConfigurationList{}
		var opts []client.ListOption
		if !all {
			opts = append(opts, client.InNamespace(o.GetNamespace()))
		}
		if err := r.Client.List(ctx, apps, opts...); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(apps.Items))
		for _, a := range apps.Items {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: a.Namespace, Name: a.Name}})
		}
		return out
	})
}

// Reconcile implements reconcile.Reconciler: one pass of the steps, ending in one status patch.
func (r *AppConfigReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if !r.Shard.ownsObject(req.NamespacedName) {
		// Another shard delivers it: this one never writes its works, finalizer or status.
		r.upToDate.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	p := &appConfigPass{key: req.NamespacedName, seen: r.upToDate.now()} // before the cache is read (see upToDateDeliveries)
	for _, step := range r.steps() {
		done, err := step(ctx, p)
		if err != nil {
			return p.result, err
		}
		if done {
			break
		}
	}
	if err := r.patchStatus(ctx, p); err != nil {
		return p.result, errors.Join(p.err, err)
	}
	if err := r.takeResume(ctx, p); err != nil {
		return p.result, err
	}
	return p.result, p.err
}

// patchResync is how often an AppConfig with patch traits is rendered again with nothing changed.
const patchResync = time.Minute

// conflictRetry is how soon an AppConfig is reconciled again after one of its writes lost a race with
// another writer (a stale cache): the watch usually brings it back sooner.
const conflictRetry = 500 * time.Millisecond

// notOwnedRecheck is how often an AppConfig blocked by a ManifestWork Ferry does not own looks again,
// besides the watch of ManifestWorks.
const notOwnedRecheck = time.Minute

// workIndex indexes cached ManifestWorks by the <namespace>/<name> of their AppConfig.
const workIndex = "ferry.io/appconfig"

// appConfigOfLabels is the AppConfig an object's Ferry labels name, if they name one.
func appConfigOfLabels(o client.Object) (types.NamespacedName, bool) {
	ns, name := o.GetLabels()[LabelAppConfigNamespace], o.GetLabels()[LabelAppConfigName]
	return types.NamespacedName{Namespace: ns, Name: name}, ns != "" && name != ""
}

// works returns the AppConfig's ManifestWorks, one per cluster: the cache's own objects, not copies (an
// AppConfig on ten thousand clusters would copy ten thousand works on every reconcile), so they are
// read only; sync copies one before changing it.
func (r *AppConfigReconciler) works(app *v1alpha2.ApplicationConfiguration) ([]*workv1.ManifestWork, error) {
	works, err := r.cachedWorks.byIndex(workIndex, client.ObjectKeyFromObject(app).String())
	if err != nil {
		return nil, fmt.Errorf("list ManifestWorks: %w", err)
	}
	return works, nil
}

// finalize deletes the AppConfig's ManifestWorks and previews and lets it go once they are gone.
func (r *AppConfigReconciler) finalize(ctx context.Context, app *v1alpha2.ApplicationConfiguration) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(app, AppConfigFinalizer) {
		return ctrl.Result{}, nil
	}
	works, err := r.works(app)
	if err != nil {
		return ctrl.Result{}, err
	}
	previews, err := r.previews(app)
	if err != nil {
		return ctrl.Result{}, err
	}
	works = append(slices.Clip(works), previews...)
	for _, mw := range works {
		if mw.DeletionTimestamp == nil {
			if err := r.deleteWork(ctx, mw); err != nil {
				return ctrl.Result{}, fmt.Errorf("delete ManifestWork %s/%s: %w", mw.Namespace, mw.Name, err)
			}
		}
	}
	if len(works) > 0 {
		return ctrl.Result{RequeueAfter: time.Second}, nil // wait for the agents to clean up
	}
	if err := r.deletePatchTraits(ctx, app, nil); err != nil {
		return ctrl.Result{}, err
	}
	controllerutil.RemoveFinalizer(app, AppConfigFinalizer)
	if err := r.Client.Update(ctx, app); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: conflictRetry}, nil // the cache is behind: look again
		}
		return ctrl.Result{}, fmt.Errorf("remove finalizer: %w", err)
	}
	return ctrl.Result{}, nil
}

// resolve finds the spec an AppConfig entry renders: the component's latest revision, or the pinned one.
func (r *AppConfigReconciler) resolve(ctx context.Context, namespace string) func(v1alpha2.ApplicationConfigurationComponent) (render.Resolved, error) {
	return func(e v1alpha2.ApplicationConfigurationComponent) (render.Resolved, error) {
		revName := e.RevisionName
		if revName == "" {
			comp := &v1alpha2.Component{}
			if err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: e.ComponentName}, comp); err != nil {
				return render.Resolved{}, fmt.Errorf("component %s: %w", e.ComponentName, err)
			}
			if comp.Status.LatestRevision == nil {
				return render.Resolved{}, fmt.Errorf("component %s has no revision recorded yet", e.ComponentName)
			}
			revName = comp.Status.LatestRevision.Name
		}
		rev := &appsv1.ControllerRevision{}
		key := types.NamespacedName{Namespace: namespace, Name: revName}
		err := r.Client.Get(ctx, key, rev)
		if apierrors.IsNotFound(err) {
			// The Component's status may name a revision just created that the cache has not seen
			// yet: a missing revision is only reported when the API server does not have it either.
			err = r.APIReader.Get(ctx, key, rev)
		}
		if err != nil {
			return render.Resolved{}, fmt.Errorf("revision %s: %w", revName, err)
		}
		return render.ResolvedOf(rev)
	}
}

// traitDefinition finds a trait's definition, named after its resource: <plural>.<group>.
func (r *AppConfigReconciler) traitDefinition(ctx context.Context) func(*unstructured.Unstructured) (*v1alpha2.TraitDefinition, error) {
	return func(t *unstructured.Unstructured) (*v1alpha2.TraitDefinition, error) {
		gvk := t.GroupVersionKind()
		name := render.ResourceOf(t, r.Mapper) + "." + gvk.Group
		def := &v1alpha2.TraitDefinition{}
		if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, def); err != nil {
			return nil, fmt.Errorf("TraitDefinition %s: %w", name, err)
		}
		return def, nil
	}
}

// patchStatus writes the status a pass ends with, when it has one and it changed: Ready, the rendered
// workloads (kept as they were when the pass rendered none), the rollout, the placement (kept when the
// pass did not place), and the clusters and what drifted on them, counted from the verdicts on the
// works (workSummaries) but those the pass deleted.
func (r *AppConfigReconciler) patchStatus(ctx context.Context, p *appConfigPass) error {
	if p.ready == nil {
		return nil
	}
	app, rendered, gone, ready, rollout, placed := p.app, p.rendered, p.gone, *p.ready, p.rolloutStatus, p.placed
	base, err := r.statusBase(app)
	if err != nil {
		return err
	}
	// Built on the status last stored, what the pass does not compute again (the workloads when it
	// rendered nothing, the placement when it placed nothing) stays as it is, and what is compared with
	// before (Ready's state, drift reports) is compared with what is stored: a cache behind the hub's own
	// last write would have the patch take those back, and record their events again.
	status := base.status.DeepCopy()
	if app.Spec.Rollout == nil {
		rollout = nil
	}
	status.Rollout = rollout
	r.setRolloutConditions(app, status, base.status.Rollout)
	status.ObservedGeneration = app.Generation
	ready.ObservedGeneration = app.Generation
	ready.Message = capConditionMessage(ready.Message)
	if old := meta.FindStatusCondition(status.Conditions, ConditionReady); old == nil || old.Status != ready.Status || old.Reason != ready.Reason {
		// One event per change of state, not per reconcile: an AppConfig that stays broken costs
		// no writes.
		typ := corev1.EventTypeNormal
		if ready.Status != metav1.ConditionTrue && ready.Reason != v1alpha2.ReasonReportOnly { // report only is asked for
			typ = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(app, nil, typ, ready.Reason, "Render", "%s", eventNote(ready.Message))
	}
	meta.SetStatusCondition(&status.Conditions, ready)
	if placed != nil {
		bound := placed.boundCondition(app.Namespace)
		bound.ObservedGeneration = app.Generation
		bound.Message = capConditionMessage(bound.Message)
		if old := meta.FindStatusCondition(status.Conditions, bound.Type); bound.Status != metav1.ConditionTrue &&
			(old == nil || old.Reason != bound.Reason || old.Message != bound.Message) {
			// One event per change of what is refused: an operator auditing before enforcing sees each.
			r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, bound.Reason, "Place", "%s", eventNote(bound.Message))
		}
		meta.SetStatusCondition(&status.Conditions, bound)
		status.Placement = placed.status()
	}
	if rendered != nil {
		status.Workloads = nil
		for _, rc := range rendered {
			ws := v1alpha2.WorkloadStatus{ComponentName: rc.ComponentName, ComponentRevisionName: rc.RevisionName, Reference: ref(rc.Workload)}
			for _, t := range rc.Traits {
				ws.Traits = append(ws.Traits, v1alpha2.WorkloadTrait{Reference: ref(t)})
			}
			for _, t := range rc.PatchTraits {
				ws.PatchTraits = append(ws.PatchTraits, v1alpha2.WorkloadTrait{Reference: ref(t)})
			}
			status.Workloads = append(status.Workloads, ws)
		}
	}
	switch {
	case !v1alpha2.ReportOnly(app.Annotations):
		status.Diff = nil
		meta.RemoveStatusCondition(&status.Conditions, v1alpha2.ConditionPreviewed)
	case p.diff != nil: // else the pass ended before it previewed (a render error): the last preview's stay
		previewed := *p.previewed
		previewed.ObservedGeneration = app.Generation
		previewed.Message = capConditionMessage(previewed.Message)
		status.Diff = p.diff
		meta.SetStatusCondition(&status.Conditions, previewed)
	}
	key := client.ObjectKeyFromObject(app)
	status.Summary, status.Clusters, status.OmittedClusters, status.Drift = r.summaries.summarize(key, v1alpha2.CurrentObjects(status.Workloads), gone)
	for _, o := range newlyDrifted(base.status.Drift, status.Drift) {
		// One event per drift report, not per reconcile: a drift the status shows already adds none.
		r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, ReasonDrifted, "Revert", "%s",
			cutMessage(driftNote(o), maxEventNote, "… (cut; the AppConfig's status.drift has all of it)"))
	}
	return r.writeStatus(ctx, app, base, status)
}

// statusBase is the status of app that its next status is built on and patched from: the one the
// cache shows, or the one this hub wrote since (writtenStatuses) if the cache does not show it yet.
func (r *AppConfigReconciler) statusBase(app *v1alpha2.ApplicationConfiguration) (writtenStatus, error) {
	cached, err := statusJSON(&app.Status)
	if err != nil {
		return writtenStatus{}, err
	}
	return r.writtenStatuses.base(client.ObjectKeyFromObject(app), writtenStatus{resourceVersion: app.ResourceVersion, status: &app.Status, json: cached}), nil
}

// writeStatus writes status as app's, if it is not what is stored: a JSON patch of what changed since
// base (statusBase), tested against its resourceVersion; if that status is no longer the one stored
// (someone wrote the AppConfig since), the status whole.
func (r *AppConfigReconciler) writeStatus(ctx context.Context, app *v1alpha2.ApplicationConfiguration, base writtenStatus, status *v1alpha2.ApplicationConfigurationStatus) error {
	key := client.ObjectKeyFromObject(app)
	want, err := statusJSON(status)
	if err != nil {
		return err
	}
	patch, err := computeStatusPatch(base.resourceVersion, base.json, want)
	if err != nil || patch == nil {
		return err
	}
	stored := app.DeepCopy()
	err = r.patchStatusWith(ctx, stored, patch, "changes")
	if isUnprocessable(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		// Computed from a status no longer stored: its test, or an operation on what is no longer
		// there, failed, and nothing was written.
		if patch, err = wholeStatusPatch(want); err != nil {
			return err
		}
		stored = app.DeepCopy()
		err = r.patchStatusWith(ctx, stored, patch, "whole")
	}
	if err != nil {
		r.writtenStatuses.forget(key)
		return err
	}
	r.writtenStatuses.record(key, writtenStatus{resourceVersion: stored.ResourceVersion, status: status.DeepCopy(), json: want})
	return nil
}

// patchStatusWith sends the JSON patch of app's status, counted as how.
func (r *AppConfigReconciler) patchStatusWith(ctx context.Context, app *v1alpha2.ApplicationConfiguration, patch []byte, how string) error {
	statusPatches.WithLabelValues(how).Inc()
	statusPatchBytes.Add(float64(len(patch)))
	if err := r.Client.Status().Patch(ctx, app, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("write the status of AppConfig %s/%s: %w", app.Namespace, app.Name, err)
	}
	return nil
}

func ref(o *unstructured.Unstructured) v1alpha2.TypedReference {
	return v1alpha2.TypedReference{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Name: o.GetName()}
}
