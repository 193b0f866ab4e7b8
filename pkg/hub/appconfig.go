package hub

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

const (
	// DefaultWorkers is how many AppConfigs the hub reconciles at once: rendering is cheap, and each
	// reconcile waits mostly on API round trips (ManifestWorks, status).
	DefaultWorkers = 10
	// DefaultEarlierRevisionsKept is how many earlier revisions' workloads stay beside the current one
	// for a revision-enabled trait: enough for a rollout in progress when one more revision comes.
	DefaultEarlierRevisionsKept = 2
	// AnnotationSpecHash, on a ManifestWork, identifies the spec the hub last wrote into it.
	AnnotationSpecHash = "ferry.io/spec-hash"
	// AppConfigFinalizer holds an AppConfig until its ManifestWorks are gone.
	AppConfigFinalizer = "ferry.io/appconfig-cleanup"
	// ConditionReady says whether the AppConfig is rendered and delivered to its clusters.
	ConditionReady = "Ready"
)

// AppConfigReconciler delivers ApplicationConfigurations: it renders them, writes one ManifestWork per
// target cluster, removes the ManifestWorks of clusters that left the placement, and folds the
// ManifestWorks' status back into the AppConfig.
type AppConfigReconciler struct {
	Client        client.Client
	Mapper        meta.RESTMapper
	ApplyOnceOnly ApplyOnceOnly
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
	checked deliveryChecks
	// The works this hub wrote moments ago, which the cache may not show yet.
	written ownWrites
	// The verdicts on every work of the AppConfigs of this shard, taken as the works change.
	verdicts *clusterVerdicts
}

// SetupWithManager registers the reconciler. ManifestWorks live in cluster namespaces, where an owner
// reference to the AppConfig cannot point: they are mapped back by their labels.
func (r *AppConfigReconciler) SetupWithManager(mgr ctrl.Manager) error {
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
	})
	if err != nil {
		return err
	}
	cachedClusters, err := cachedObjectsOf(context.Background(), r.cache, &managedCluster{}, nil)
	if err != nil {
		return err
	}
	r.clusters = func(context.Context) ([]*clusterv1.ManagedCluster, error) { return cachedClusters.all() }
	byLabels := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if app, ok := appConfigOfLabels(o); ok {
			return []reconcile.Request{{NamespacedName: app}}
		}
		return nil
	})
	// A ManifestWork of an AppConfig's name that Ferry did not write for it blocks the AppConfig's
	// delivery to that cluster, and the index does not see it: its name finds the AppConfig, so that
	// deleting or relabelling it brings the AppConfig back at once.
	labelsOrName := func(_ context.Context, o client.Object) []reconcile.Request {
		var out []reconcile.Request
		labelled, ok := appConfigOfLabels(o)
		if ok {
			out = append(out, reconcile.Request{NamespacedName: labelled})
		}
		if named, ok := appConfigOfWorkName(o.GetName()); ok && named != labelled {
			out = append(out, reconcile.Request{NamespacedName: named})
		}
		return out
	}
	r.verdicts = newClusterVerdicts(r.Shard.ownsObject)
	workEvents := batchedReports{appConfigsOf: labelsOrName, reportBatch: cmp.Or(r.ReportBatch, DefaultReportBatch),
		changed: r.checked.changed, observe: r.verdicts.observe}
	allInNamespace := func(all bool) handler.EventHandler {
		return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			// A cluster's labels, a PlacementDecision or a Component: delivery passes look again.
			r.checked.changed()
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
	r.byLabels = byLabels
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("appconfigs").
		For(&v1alpha2.ApplicationConfiguration{}, builder.WithPredicates(appConfigChanged)).
		Watches(&v1alpha2.ApplicationConfiguration{}, statusWritten(cmp.Or(r.ReportBatch, DefaultReportBatch))).
		Watches(&workv1.ManifestWork{}, workEvents).
		Watches(&v1alpha2.Component{}, allInNamespace(false)).
		// Only a cluster's labels and its coming and going change a placement; its status does not.
		Watches(&managedCluster{}, allInNamespace(true), builder.WithPredicates(placementChanged)).
		Watches(&placementDecision{}, allInNamespace(false)).
		// What an AppConfig may reach: a binding moves its namespace's AppConfigs, a set any of them.
		Watches(&clusterv1beta2.ManagedClusterSetBinding{}, allInNamespace(false), builder.WithPredicates(bindingChanged)).
		Watches(&clusterv1beta2.ManagedClusterSet{}, allInNamespace(true), builder.WithPredicates(bindingChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(r.Workers, DefaultWorkers)}).
		Build(r)
	r.controller = c
	return err
}

// Reconcile implements reconcile.Reconciler.
func (r *AppConfigReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if !r.Shard.ownsObject(req.NamespacedName) {
		// Another shard delivers it: this one never writes its works, finalizer or status.
		r.checked.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	seen := r.checked.now() // before the cache is read (see deliveryChecks)
	app := &v1alpha2.ApplicationConfiguration{}
	if err := r.Client.Get(ctx, req.NamespacedName, app); err != nil {
		if apierrors.IsNotFound(err) {
			r.checked.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if app.DeletionTimestamp != nil {
		r.checked.forget(req.NamespacedName)
		return r.finalize(ctx, app)
	}
	if app.Spec.Rollout != nil {
		// A rollout decides from its own record (the stable revision, a halt) in the status: read as
		// the API server has it, not as a cache that may not have seen the last write of it yet.
		fresh := &v1alpha2.ApplicationConfiguration{}
		if err := r.APIReader.Get(ctx, req.NamespacedName, fresh); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		app = fresh
	}
	if controllerutil.AddFinalizer(app, AppConfigFinalizer) {
		if err := r.Client.Update(ctx, app); err != nil {
			if apierrors.IsConflict(err) {
				// The AppConfig changed since the cache saw it: its watch event brings it back.
				return ctrl.Result{RequeueAfter: conflictRetry}, nil
			}
			return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
	}

	rendered, err := Render(RenderInput{
		App: app, Component: r.resolve(ctx, app.Namespace), TraitDefinition: r.traitDefinition(ctx),
		PublishedPatches: r.publishedPatches(ctx, app), PatchedRevision: r.patchedRevision(ctx, app),
		ClusterScoped: clusterScopedIn(r.Mapper),
	})
	var re *RenderError
	var pending *PatchesPendingError
	switch {
	case errors.As(err, &re):
		// Nothing half-rendered is delivered, and nothing delivered before is taken away.
		return ctrl.Result{RequeueAfter: 30 * time.Second}, r.setStatus(ctx, app, nil, nil, metav1.Condition{
			Type: ConditionReady, Status: metav1.ConditionFalse, Reason: re.Reason, Message: re.Error()}, app.Status.Rollout, nil)
	case errors.As(err, &pending):
		// The workload is held back, as it was, until it can change once with every patch (seed
		// 002). The patch traits are published for their controllers; their watches bring the
		// AppConfig back, and the requeue covers a ConfigMap published after its trait turned Ready.
		if err := r.publishPatchTraits(ctx, app, pending.Component, pending.Traits); err != nil {
			var re *RenderError
			if errors.As(err, &re) {
				return ctrl.Result{RequeueAfter: 30 * time.Second}, r.setStatus(ctx, app, nil, nil, metav1.Condition{
					Type: ConditionReady, Status: metav1.ConditionFalse, Reason: re.Reason, Message: re.Error()}, app.Status.Rollout, nil)
			}
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: 10 * time.Second}, r.setStatus(ctx, app, nil, nil, metav1.Condition{
			Type: ConditionReady, Status: metav1.ConditionFalse, Reason: "WaitingForPatchTraits", Message: pending.Error()}, app.Status.Rollout, nil)
	case err != nil:
		return ctrl.Result{}, err
	}
	if err := r.deleteStalePatchTraits(ctx, app, rendered); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.recordPatchedRevisions(ctx, app, rendered); err != nil {
		return ctrl.Result{}, err
	}
	target, err := buildRevisionBase(app, rendered, r.ApplyOnceOnly, r.Mapper)
	if errors.As(err, &re) {
		// Too large or empty to be a ManifestWork: nothing of it is delivered, what was stays.
		return ctrl.Result{RequeueAfter: 30 * time.Second}, r.setStatus(ctx, app, nil, nil, metav1.Condition{
			Type: ConditionReady, Status: metav1.ConditionFalse, Reason: re.Reason, Message: re.Error()}, app.Status.Rollout, nil)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	var keep []string // a rollout's revisions stay as long as it needs them
	if ro := app.Status.Rollout; ro != nil {
		keep = append(keep, ro.Revision, ro.StableRevision)
	}
	// A revision that cannot be recorded (too large for the hub's storage, as its works will be too)
	// does not hold back the delivery, which reports its own failures; it is reported after it.
	recordErr := r.recordAppRevision(ctx, app, target, keep...)
	if undone, err := r.undoneRevision(ctx, app); err != nil {
		if errors.As(err, &re) {
			return ctrl.Result{}, r.setStatus(ctx, app, nil, nil, metav1.Condition{
				Type: ConditionReady, Status: metav1.ConditionFalse, Reason: re.Reason, Message: re.Error()}, app.Status.Rollout, nil)
		}
		return ctrl.Result{}, err
	} else if undone != nil {
		target = undone
	}
	placed, unmoved := r.checked.placement(req.NamespacedName, app.Generation, seen)
	if !unmoved {
		if placed, err = Place(ctx, r.Client, r.clusters, app, cmp.Or(r.ClusterSetBindings, ClusterSetBindingsEnforce)); err != nil {
			return ctrl.Result{}, err
		}
	}
	clusters := placed.Clusters
	plan, ro := deliveryPlan{uniform: target}, rolloutOutcome{}
	if app.Spec.Rollout != nil {
		if plan, ro, err = r.planRollout(ctx, app, target, clusters, time.Now()); err != nil {
			if errors.As(err, &re) {
				// Nothing is moved by a rollout the hub cannot read: every cluster keeps what it has.
				return ctrl.Result{}, r.setStatus(ctx, app, nil, nil, metav1.Condition{
					Type: ConditionReady, Status: metav1.ConditionFalse, Reason: re.Reason, Message: re.Error()}, app.Status.Rollout, nil)
			}
			return ctrl.Result{}, err
		}
		if rolloutMoved(app.Status.Rollout, ro.status) {
			// The decision is recorded before the works follow it: should the hub stop in between, the
			// next one decides from it (a halt stays a halt, the stable revision stays known) and
			// writes the works it did not.
			if err := r.recordRollout(ctx, app, ro.status); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	delivered, gone, err := r.deliver(ctx, app, plan, placed, seen)
	if err != nil {
		return ctrl.Result{}, err
	}
	if cond, notReady := delivered.notReady(len(clusters)); notReady {
		if err := r.setStatus(ctx, app, rendered, gone, cond, ro.status, &placed); err != nil {
			return ctrl.Result{}, err
		}
		if len(delivered.failed) > 0 {
			return ctrl.Result{}, errors.New(cond.Message) // retried with backoff
		}
		// Only the owner of the foreign work can clear the way; the watch of ManifestWorks brings the
		// AppConfig back when they rename or delete it, and this looks again now and then meanwhile.
		return ctrl.Result{RequeueAfter: notOwnedRecheck}, nil
	}
	if recordErr != nil {
		return ctrl.Result{}, errors.Join(recordErr, r.setStatus(ctx, app, rendered, gone, metav1.Condition{
			Type: ConditionReady, Status: metav1.ConditionFalse, Reason: "RevisionNotRecorded",
			Message: fmt.Sprintf("delivered to %d clusters, but %v", len(clusters), recordErr)}, ro.status, &placed))
	}
	if delivered.raced {
		// Not a failure, and not delivered yet either: the status stays as it is until it is.
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	var result ctrl.Result
	for _, rc := range rendered {
		if len(rc.PatchTraits) > 0 {
			// A patch-trait controller may rewrite its ConfigMap without touching the trait, and the
			// hub watches traits, not every ConfigMap: look again now and then (reads only).
			result.RequeueAfter = patchResync
		}
	}
	if delivered.pending && (result.RequeueAfter == 0 || ownWriteFresh < result.RequeueAfter) {
		// A work written moments ago was not looked at again: look once the write is no longer trusted
		// over the cache, in case no event of the work's comes first (someone deleted it meanwhile).
		result.RequeueAfter = ownWriteFresh
	}
	if ro.recheck > 0 && (result.RequeueAfter == 0 || ro.recheck < result.RequeueAfter) {
		// A soak ends or a deadline passes with no report to bring the AppConfig back.
		result.RequeueAfter = ro.recheck
	}
	ready := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: "Delivered",
		Message: fmt.Sprintf("delivered to %d clusters", len(clusters))}
	if notBound, ok := placed.notBoundReady(app.Namespace); ok {
		ready = notBound
	} else if len(placed.Refused) > 0 {
		ready.Message += fmt.Sprintf("; %d clusters the placement names are not bound (condition %s)", len(placed.Refused), v1alpha2.ConditionClustersBound)
	}
	if err := r.setStatus(ctx, app, rendered, gone, ready, ro.status, &placed); err != nil {
		return result, err
	}
	if ro.resumed {
		// The halt is lifted in the status written above: the request to lift it is taken away, so
		// that a later halt of the same revision holds.
		patch := client.MergeFrom(app.DeepCopy())
		delete(app.Annotations, v1alpha2.AnnotationRolloutResume)
		if err := r.Client.Patch(ctx, app, patch); err != nil {
			return result, fmt.Errorf("remove annotation %s: %w", v1alpha2.AnnotationRolloutResume, err)
		}
	}
	return result, nil
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

// finalize deletes the AppConfig's ManifestWorks and lets it go once they are gone.
func (r *AppConfigReconciler) finalize(ctx context.Context, app *v1alpha2.ApplicationConfiguration) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(app, AppConfigFinalizer) {
		return ctrl.Result{}, nil
	}
	works, err := r.works(app)
	if err != nil {
		return ctrl.Result{}, err
	}
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
func (r *AppConfigReconciler) resolve(ctx context.Context, namespace string) func(v1alpha2.ApplicationConfigurationComponent) (ResolvedComponent, error) {
	return func(e v1alpha2.ApplicationConfigurationComponent) (ResolvedComponent, error) {
		revName := e.RevisionName
		if revName == "" {
			comp := &v1alpha2.Component{}
			if err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: e.ComponentName}, comp); err != nil {
				return ResolvedComponent{}, fmt.Errorf("component %s: %w", e.ComponentName, err)
			}
			if comp.Status.LatestRevision == nil {
				return ResolvedComponent{}, fmt.Errorf("component %s has no revision recorded yet", e.ComponentName)
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
			return ResolvedComponent{}, fmt.Errorf("revision %s: %w", revName, err)
		}
		spec := &v1alpha2.ComponentSpec{}
		if err := json.Unmarshal(rev.Data.Raw, spec); err != nil {
			return ResolvedComponent{}, fmt.Errorf("revision %s: %w", revName, err)
		}
		return ResolvedComponent{ComponentName: rev.Labels[ComponentLabel], RevisionName: revName, Spec: spec}, nil
	}
}

// traitDefinition finds a trait's definition, named after its resource: <plural>.<group>.
func (r *AppConfigReconciler) traitDefinition(ctx context.Context) func(*unstructured.Unstructured) (*v1alpha2.TraitDefinition, error) {
	return func(t *unstructured.Unstructured) (*v1alpha2.TraitDefinition, error) {
		gvk := t.GroupVersionKind()
		name := resourceOf(t, r.Mapper) + "." + gvk.Group
		def := &v1alpha2.TraitDefinition{}
		if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, def); err != nil {
			return nil, fmt.Errorf("TraitDefinition %s: %w", name, err)
		}
		return def, nil
	}
}

// setStatus writes the AppConfig's status when it changed, with rollout as the rollout's status. Its
// clusters are counted from the verdicts on its works (clusterVerdicts) but those in gone, which this
// reconcile deleted.
func (r *AppConfigReconciler) setStatus(ctx context.Context, app *v1alpha2.ApplicationConfiguration, rendered []RenderedComponent,
	gone map[types.NamespacedName]bool, ready metav1.Condition, rollout *v1alpha2.RolloutStatus, placed *Placed) error {
	status := app.Status.DeepCopy()
	if app.Spec.Rollout == nil {
		rollout = nil
	}
	status.Rollout = rollout
	r.setRolloutConditions(app, status, app.Status.Rollout)
	status.ObservedGeneration = app.Generation
	ready.ObservedGeneration = app.Generation
	ready.Message = capConditionMessage(ready.Message)
	if old := meta.FindStatusCondition(status.Conditions, ConditionReady); old == nil || old.Status != ready.Status || old.Reason != ready.Reason {
		// One event per change of state, not per reconcile: an AppConfig that stays broken costs
		// no writes.
		typ := corev1.EventTypeNormal
		if ready.Status != metav1.ConditionTrue {
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
	status.Summary, status.Clusters, status.OmittedClusters = r.verdicts.summarize(client.ObjectKeyFromObject(app), v1alpha2.CurrentObjects(status.Workloads), gone)
	if equality.Semantic.DeepEqual(status, &app.Status) {
		return nil
	}
	patch := client.MergeFrom(app.DeepCopy())
	app.Status = *status
	return r.Client.Status().Patch(ctx, app, patch)
}

func ref(o *unstructured.Unstructured) v1alpha2.TypedReference {
	return v1alpha2.TypedReference{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Name: o.GetName()}
}
