package hub

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/render"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// delivery is what deliver could not do. A failed or not-owned cluster is shown to the user; a raced
// write is not: it is a race with another writer (an agent writing the work's status, someone deleting
// it), retried soon.
type delivery struct {
	// failed are the clusters whose ManifestWork could not be written, each with why.
	failed []string
	// notOwned are the clusters holding a ManifestWork of the AppConfig's name that Ferry did not
	// create for it, each with what to do.
	notOwned []string
	// notOverridden are the clusters the overrides cannot render for, each with the override's error:
	// they keep the work they have.
	notOverridden []string
	// raced is set when a write lost a race with another writer.
	raced bool
	// pending is set when a work this hub wrote moments ago was not looked at again: the cache does
	// not show the write yet.
	pending bool
}

// errWriteRaced marks a ManifestWork write that lost a race with another writer: nothing is wrong,
// the next round writes it.
var errWriteRaced = errors.New("the ManifestWork changed while it was being written")

// WorkNotOwnedError says that a ManifestWork of the name Ferry writes for an AppConfig exists, but Ferry
// did not create it for that AppConfig: Ferry neither adopts nor overwrites it.
type WorkNotOwnedError struct {
	Namespace, Name string
	// Owner is the <namespace>/<name> of the AppConfig the work's labels name; empty when they name none.
	Owner string
}

func (e *WorkNotOwnedError) Error() string {
	whose := "it has no " + LabelAppConfigNamespace + " and " + LabelAppConfigName + " labels"
	if e.Owner != "" {
		whose = "its labels give it to AppConfig " + e.Owner
	}
	return fmt.Sprintf("ManifestWork %s/%s exists but Ferry did not create it for this AppConfig (%s); Ferry neither adopts nor overwrites it: "+
		"rename or delete that ManifestWork and the AppConfig is delivered to %s", e.Namespace, e.Name, whose, e.Namespace)
}

// ownedBy reports whether Ferry wrote mw for app: its labels name app, as the AppConfig it delivers or,
// for app's preview (by its name), as the AppConfig it previews.
func ownedBy(mw *workv1.ManifestWork, app *v1alpha2.ApplicationConfiguration) bool {
	if mw.Name == PreviewWorkName(app) {
		return mw.Labels[LabelPreviewOfNamespace] == app.Namespace && mw.Labels[LabelPreviewOfName] == app.Name
	}
	return mw.Labels[LabelAppConfigNamespace] == app.Namespace && mw.Labels[LabelAppConfigName] == app.Name
}

// writeConcurrency is how many ManifestWorks of one AppConfig are written at once: a Component change
// rewrites a work on every cluster of the fleet, and one write at a time would take a round trip each.
// The client's rate limit (--kube-api-qps) still bounds the hub as a whole.
const writeConcurrency = 16

// deliver writes the ManifestWork of every target cluster and deletes those of clusters that left the
// placement, updating works to match, several at once, and returns the works it deleted. A cluster
// whose ManifestWork cannot be written does not stop the others: it is returned in the delivery, with
// why. One event per kind of change names the clusters.
//
// Each cluster's work carries the revision plan gives it: the same one everywhere, built and hashed
// once, not once per cluster of a fleet, or during a rollout one of a few.
//
// The pass over the works is skipped when the last one found this same spec delivered to these same
// clusters and nothing changed since seen (upToDateDeliveries): an agent's status report needs no pass.
func (r *AppConfigReconciler) deliver(ctx context.Context, app *v1alpha2.ApplicationConfiguration, plan deliveryPlan,
	placed Placed, seen uint64) (delivery, map[types.NamespacedName]bool, error) {
	key, hash, clusters := client.ObjectKeyFromObject(app), "", placed.Clusters
	if plan.uniform != nil {
		hash = plan.uniform.hash()
		if r.upToDate.complete(key, app.Generation, seen, hash, placed) {
			return delivery{}, nil, nil
		}
	}
	r.upToDate.forget(key)
	now := time.Now()
	works, err := r.works(app)
	if err != nil {
		return delivery{}, nil, err
	}
	manifestWorkChecks.Add(float64(len(works)))
	builds, err := r.newClusterWorks(ctx, app, plan)
	if err != nil {
		return delivery{}, nil, err
	}
	byCluster := worksByCluster(works)
	r.recentWrites.forgetOld(key, cachedIn(byCluster), now)
	round := r.newDeliveryRound(app, r.deliveredWorks(app))
	wanted := make(map[string]bool, len(clusters))
	for _, cluster := range clusters {
		wanted[cluster] = true
		have, base := byCluster[cluster], plan.baseFor(cluster)
		if base == nil {
			continue
		}
		cw, err := builds.of(base, cluster)
		if err != nil {
			round.out.notOverridden = append(round.out.notOverridden, err.Error())
			continue
		}
		if have != nil && upToDate(have, cw.want) {
			continue // the steady state of a fleet: nothing to build, nothing to write
		}
		if r.recentWrites.unseen(key, types.NamespacedName{Namespace: cluster, Name: cw.want.Name}, have, writtenAs(cw.want), now) {
			round.out.pending = true // written moments ago; the cache shows the work from before
			continue
		}
		round.writers.Go(func() error { round.write(ctx, cluster, cw, base.Rendered, have); return nil })
	}
	for cluster, mw := range byCluster {
		if wanted[cluster] {
			continue
		}
		why := " (it left the placement)"
		if _, refused := slices.BinarySearch(placed.Refused, cluster); refused {
			why = " (no ManagedClusterSet bound to namespace " + app.Namespace + " holds it)"
		}
		round.writers.Go(func() error { round.remove(ctx, cluster, mw, why); return nil })
	}
	out := round.finish()
	if hash != "" && len(round.changed) == 0 && len(out.failed) == 0 && len(out.notOwned) == 0 && len(out.notOverridden) == 0 && !out.raced && !out.pending {
		r.upToDate.record(key, upToDateDelivery{changes: seen, generation: app.Generation, specHash: hash, placed: placed})
	}
	return out, round.gone, nil
}

// worksByCluster are works (one per cluster) by their cluster.
func worksByCluster(works []*workv1.ManifestWork) map[string]*workv1.ManifestWork {
	byCluster := make(map[string]*workv1.ManifestWork, len(works))
	for _, mw := range works {
		byCluster[mw.Namespace] = mw
	}
	return byCluster
}

// cachedIn looks a work up among works by cluster, as recentWorkWrites.forgetOld does.
func cachedIn(byCluster map[string]*workv1.ManifestWork) func(work types.NamespacedName) metav1.Object {
	return func(work types.NamespacedName) metav1.Object {
		if mw := byCluster[work.Namespace]; mw != nil && mw.Name == work.Name {
			return mw
		}
		return nil
	}
}

// deliveryRound is the writes of one delivery pass, several at once: each writer reports what became of
// its cluster's work, and the round ends with one event per kind of change naming the clusters.
type deliveryRound struct {
	r       *AppConfigReconciler
	app     *v1alpha2.ApplicationConfiguration
	key     types.NamespacedName
	kind    workKind
	writers errgroup.Group
	mu      sync.Mutex // guards what the writers fill: out, changed and gone
	out     delivery
	changed map[string][]string // event reason → clusters
	gone    map[types.NamespacedName]bool
}

// workKind is which works of an AppConfig a delivery round writes: those that deliver it, or its
// previews (preview.go).
type workKind struct {
	// noun names the works in events: "ManifestWork <name>"; reasonPrefix, when set, replaces the
	// "ManifestWork" its events' reasons start with ("PreviewCreated"), so that nobody takes a
	// preview's for a delivery.
	noun, reasonPrefix string
	// recent are this hub's writes of such works that its cache may not show yet.
	recent *recentWorkWrites
	// preview: each cluster is written the preview of its work (previewWork), not the work.
	preview bool
}

// deliveredWorks are the works that deliver app.
func (r *AppConfigReconciler) deliveredWorks(app *v1alpha2.ApplicationConfiguration) workKind {
	return workKind{noun: "ManifestWork " + ManifestWorkName(app), recent: &r.recentWrites}
}

// newDeliveryRound starts a round of writes of app's works of kind.
func (r *AppConfigReconciler) newDeliveryRound(app *v1alpha2.ApplicationConfiguration, kind workKind) *deliveryRound {
	round := &deliveryRound{r: r, app: app, key: client.ObjectKeyFromObject(app), kind: kind, changed: map[string][]string{}, gone: map[types.NamespacedName]bool{}}
	round.writers.SetLimit(writeConcurrency)
	return round
}

// write gives cluster's work cw's (a copy: the client decodes its answer into what it writes), or its
// preview in a round of previews, built of a revision that rendered the components rendered (none for a
// preview: it shows the revision's own objects); have is the work the cache shows.
func (d *deliveryRound) write(ctx context.Context, cluster string, cw clusterWork, rendered []render.Component, have *workv1.ManifestWork) {
	r, app := d.r, d.app
	want, err := cw.build()
	if err != nil {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.out.notOverridden = append(d.out.notOverridden, err.Error())
		return
	}
	mw := want.DeepCopy()
	if d.kind.preview {
		mw, err = previewWork(want)
		if err != nil {
			d.mu.Lock()
			defer d.mu.Unlock()
			d.out.failed = append(d.out.failed, fmt.Sprintf("cluster %s: preview: %v", cluster, err))
			return
		}
	}
	mw.Namespace = cluster
	if have != nil && slices.ContainsFunc(rendered, func(rc render.Component) bool { return rc.RevisionEnabled }) {
		// The earlier revisions' workloads on this cluster are in the stored work's manifests, which
		// the cache does not keep (see slimWork).
		if have, err = r.storedWork(ctx, app, mw); err == nil {
			err = render.KeepEarlierRevisions(mw, have, rendered, cmp.Or(r.EarlierRevisionsKept, DefaultEarlierRevisionsKept))
		}
	}
	var reason string
	if err == nil {
		reason, err = r.sync(ctx, app, mw, have)
	}
	if reason != "" {
		// From the answer, not the pass's start: under load a write waits its turn for seconds.
		d.kind.recent.record(d.key, client.ObjectKeyFromObject(mw), have, writtenAs(mw), mw, time.Now())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var notOwned *WorkNotOwnedError
	switch {
	case errors.As(err, &notOwned):
		d.out.notOwned = append(d.out.notOwned, fmt.Sprintf("cluster %s: %v", cluster, err))
		if d.kind.preview {
			r.blockedPreviews.Store(client.ObjectKeyFromObject(mw), d.key)
		}
	case errors.Is(err, errWriteRaced):
		log.FromContext(ctx).V(1).Info("ManifestWork write raced another writer, retrying soon", "cluster", cluster, "error", err.Error())
		d.out.raced = true
	case err != nil:
		d.out.failed = append(d.out.failed, fmt.Sprintf("cluster %s: %s", cluster, writeFailure(mw, err)))
	case reason != "":
		d.changed[reason] = append(d.changed[reason], cluster)
		if d.kind.preview {
			r.blockedPreviews.Delete(client.ObjectKeyFromObject(mw))
		}
	}
}

// remove deletes the work of a cluster the AppConfig no longer reaches, why saying why.
func (d *deliveryRound) remove(ctx context.Context, cluster string, mw *workv1.ManifestWork, why string) {
	err := d.r.deleteWork(ctx, mw)
	if err == nil {
		d.kind.recent.forget(d.key, client.ObjectKeyFromObject(mw)) // so that a cluster back at once gets it
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.out.failed = append(d.out.failed, fmt.Sprintf("cluster %s: delete ManifestWork %s/%s%s: %v", cluster, mw.Namespace, mw.Name, why, err))
		return
	}
	d.changed["ManifestWorkDeleted"] = append(d.changed["ManifestWorkDeleted"], cluster+why)
	d.gone[client.ObjectKeyFromObject(mw)] = true
}

// finish waits for the writers, records one event per kind of change, and returns what could not be
// delivered.
func (d *deliveryRound) finish() delivery {
	_ = d.writers.Wait() // the writers report through out, changed and gone, never an error
	slices.Sort(d.out.failed)
	slices.Sort(d.out.notOwned)
	slices.Sort(d.out.notOverridden)
	for _, reason := range slices.Sorted(maps.Keys(d.changed)) {
		action := workEventActions[reason]
		names := d.changed[reason]
		slices.Sort(names)
		if d.kind.reasonPrefix != "" {
			reason = d.kind.reasonPrefix + strings.TrimPrefix(reason, "ManifestWork")
		}
		d.r.Recorder.Eventf(d.app, nil, corev1.EventTypeNormal, reason, action,
			"%sd %s on %s", strings.ToLower(action), d.kind.noun, someOf(names, maxEventNote/2))
	}
	return d.out
}

// notReady is the Ready condition for what could not be delivered, if anything could not, out of
// clusters targeted.
func (d delivery) notReady(clusters int) (metav1.Condition, bool) {
	switch {
	case len(d.failed) > 0:
		msg := fmt.Sprintf("ManifestWorks not written on %d of %d clusters: %s", len(d.failed)+len(d.notOwned), clusters, strings.Join(append(d.failed, d.notOwned...), "; "))
		return metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: "ManifestWorkFailed", Message: msg}, true
	case len(d.notOwned) > 0:
		msg := fmt.Sprintf("delivered to %d of %d clusters; not delivered to %s", clusters-len(d.notOwned)-len(d.notOverridden), clusters, strings.Join(append(d.notOwned, d.notOverridden...), "; "))
		return metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: "ManifestWorkNotOwned", Message: msg}, true
	case len(d.notOverridden) > 0:
		msg := fmt.Sprintf("delivered to %d of %d clusters; the others keep what they have: %s", clusters-len(d.notOverridden), clusters, strings.Join(d.notOverridden, "; "))
		return metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: "OverrideFailed", Message: msg}, true
	}
	return metav1.Condition{}, false
}

// writeFailure says why a ManifestWork could not be written, and for one too large what to do.
func writeFailure(mw *workv1.ManifestWork, err error) string {
	why := err.Error()
	if apierrors.IsRequestEntityTooLargeError(err) || strings.Contains(why, "too large") {
		size := 0
		for _, m := range mw.Spec.Workload.Manifests {
			size += len(m.Raw)
		}
		why += fmt.Sprintf(" (its manifests take %d KiB; the hub stores objects up to about 1.5 MiB: split the application into smaller AppConfigs)", size/1024)
	}
	return why
}

// workEventActions are the actions of the ManifestWork events, by reason.
var workEventActions = map[string]string{"ManifestWorkCreated": "Create", "ManifestWorkUpdated": "Update", "ManifestWorkDeleted": "Delete"}

// sync creates app's ManifestWork want (its AnnotationSpecHash set) or updates the spec and labels of have, the one the cache shows,
// writing only when they changed. What was written is known by a hash of the spec in an annotation: the
// API server fills defaults into the stored spec, so comparing it with the rendered one would see a
// change every time.
//
// An update is a JSON patch without a resourceVersion (patchWork): the agent writes the work's status
// at any time, and an Update from the cached version would be refused as stale again and again while a
// fleet reports. A work of this name that Ferry did not write for app (found when Create says it exists,
// or when the work was replaced since the cache saw it) is left alone and reported as a
// WorkNotOwnedError.
func (r *AppConfigReconciler) sync(ctx context.Context, app *v1alpha2.ApplicationConfiguration, want, have *workv1.ManifestWork) (event string, err error) {
	if have == nil {
		metav1.SetMetaDataAnnotation(&want.ObjectMeta, AnnotationRevisionSince, time.Now().UTC().Format(time.RFC3339))
		err := r.Client.Create(ctx, want)
		if err == nil {
			return "ManifestWorkCreated", nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("create ManifestWork %s/%s: %w", want.Namespace, want.Name, err)
		}
		// The cache did not show it as app's: either the cache is behind a work Ferry created, or the
		// work is someone else's.
		if have, err = r.storedWork(ctx, app, want); err != nil {
			return "", err
		}
	}
	if upToDate(have, want) {
		return "", nil
	}
	patch, err := workPatch(have, want, time.Now())
	if err != nil {
		return "", err
	}
	written := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: have.Namespace, Name: have.Name}}
	err = r.Client.Patch(ctx, written, client.RawPatch(types.JSONPatchType, patch))
	switch {
	case err == nil:
		want.UID, want.ResourceVersion = written.UID, written.ResourceVersion // what the write made, for recentWorkWrites
		return "ManifestWorkUpdated", nil
	case apierrors.IsNotFound(err):
		return "", fmt.Errorf("ManifestWork %s/%s deleted: %w", have.Namespace, have.Name, errWriteRaced)
	case isUnprocessable(err):
		// Either the spec is invalid, or the patch's test of the UID failed: the work was deleted and
		// made again since the cache saw it, and whose it is now decides.
		stored, serr := r.storedWork(ctx, app, want)
		switch {
		case serr != nil:
			return "", serr
		case stored.UID != have.UID:
			return "", fmt.Errorf("ManifestWork %s/%s made again since it was read: %w", have.Namespace, have.Name, errWriteRaced)
		}
	}
	return "", fmt.Errorf("update ManifestWork %s/%s: %w", have.Namespace, have.Name, err)
}

// isUnprocessable reports whether the API server answered 422, as it does for a JSON patch whose test
// operation fails.
func isUnprocessable(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Code == http.StatusUnprocessableEntity
}

// jsonPatchOp is one operation of an RFC 6902 JSON patch.
type jsonPatchOp struct {
	Op string `json:"op"`
	// From is the source of a copy.
	From  string `json:"from,omitempty"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// workPatch builds the JSON patch that gives have (as the cache shows it) want's spec, labels, spec
// hash and revision, and no other change. It holds without a resourceVersion, whatever status was
// written since: the spec, when its hash changes, is replaced whole (so nothing of an older spec
// survives, even if the cache is behind an earlier write of the hub's), labels and annotations are set
// key by key (others' keys stay), and a test of the UID makes sure the work patched is the one the
// cache showed as app's.
// AnnotationRevisionSince is set to now when the spec hash changes.
func workPatch(have, want *workv1.ManifestWork, now time.Time) ([]byte, error) {
	ops := []jsonPatchOp{{Op: "test", Path: "/metadata/uid", Value: string(have.UID)}}
	if have.Annotations[AnnotationSpecHash] != want.Annotations[AnnotationSpecHash] {
		// Else the stored spec is want's already, up to the AppConfig generation its objects are
		// stamped with (see setSpecHash): new labels or a new revision of the same render (a cluster
		// no changed override selects) give the agent nothing to apply again.
		ops = append(ops, jsonPatchOp{Op: "add", Path: "/spec", Value: want.Spec})
	}
	set := func(field string, current map[string]string, values map[string]string) {
		if len(values) == 0 {
			return
		}
		if current == nil {
			ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/" + field, Value: values})
			return
		}
		for _, k := range slices.Sorted(maps.Keys(values)) {
			if current[k] != values[k] {
				ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/" + field + "/" + escapeJSONPointer(k), Value: values[k]})
			}
		}
	}
	set("labels", have.Labels, want.Labels)
	annotations := map[string]string{AnnotationSpecHash: want.Annotations[AnnotationSpecHash]}
	if rev := want.Annotations[AnnotationRevisionHash]; rev != "" || have.Annotations[AnnotationRevisionHash] != "" {
		annotations[AnnotationRevisionHash] = v1alpha2.WorkRevision(want.Annotations)
	}
	if reportDiff := want.Annotations[workreport.AnnotationReportDiff]; reportDiff != "" {
		annotations[workreport.AnnotationReportDiff] = reportDiff // a preview stays one
	}
	if v1alpha2.WorkRevision(have.Annotations) != v1alpha2.WorkRevision(want.Annotations) {
		// A new revision, not the same one rendered again for a cluster whose facts changed.
		annotations[AnnotationRevisionSince] = now.UTC().Format(time.RFC3339)
	}
	set("annotations", have.Annotations, annotations)
	patch, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encode the patch of ManifestWork %s/%s: %w", have.Namespace, have.Name, err)
	}
	return patch, nil
}

// escapeJSONPointer escapes a map key for a JSON pointer (RFC 6901): "~" as "~0", "/" as "~1".
func escapeJSONPointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// setSpecHash records the hash of mw's spec in its AnnotationSpecHash. It is the hash of the spec as
// rendered: the workloads of earlier revisions a rollout keeps (KeepEarlierRevisions) change only when
// the rendered spec does, so the same hash says that nothing is to be written.
//
// The hash leaves out the AppConfig's generation that every rendered object is stamped with
// (AnnotationAppGen, rendered at generation): an edit of the AppConfig that changes nothing delivered
// — its placement, its rollout, a pause — is no new revision of the application, and rewrites no work.
// upToDate reports whether have carries want's spec (by its hash), revision and labels. The revision
// is compared on its own: a cluster no override selects keeps its spec from one revision to the next
// when only the overrides changed, and a rollout reads which revision it is at.
func upToDate(have, want *workv1.ManifestWork) bool {
	if have.Annotations[AnnotationSpecHash] != want.Annotations[AnnotationSpecHash] ||
		v1alpha2.WorkRevision(have.Annotations) != v1alpha2.WorkRevision(want.Annotations) ||
		have.Annotations[workreport.AnnotationReportDiff] != want.Annotations[workreport.AnnotationReportDiff] {
		return false
	}
	for k, v := range want.Labels {
		if have.Labels[k] != v {
			return false
		}
	}
	return true
}

// writtenAs is what a write of mw gives the stored work, as recentWorkWrites tells writes apart: its
// spec (by hash) and its revision, which may change alone (see upToDate).
func writtenAs(mw *workv1.ManifestWork) string {
	return mw.Annotations[AnnotationSpecHash] + "@" + v1alpha2.WorkRevision(mw.Annotations)
}

// storedWork reads the ManifestWork named like want from the API server, past the cache, and makes sure
// Ferry wrote it for app.
func (r *AppConfigReconciler) storedWork(ctx context.Context, app *v1alpha2.ApplicationConfiguration, want *workv1.ManifestWork) (*workv1.ManifestWork, error) {
	stored := &workv1.ManifestWork{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), stored); err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted since Create or Update saw it: the next round creates it.
			return nil, fmt.Errorf("ManifestWork %s/%s deleted: %w", want.Namespace, want.Name, errWriteRaced)
		}
		return nil, fmt.Errorf("read ManifestWork %s/%s: %w", want.Namespace, want.Name, err)
	}
	if !ownedBy(stored, app) {
		e := &WorkNotOwnedError{Namespace: stored.Namespace, Name: stored.Name}
		if ns, name := stored.Labels[LabelAppConfigNamespace], stored.Labels[LabelAppConfigName]; ns != "" || name != "" {
			e.Owner = ns + "/" + name
		}
		return nil, e
	}
	return stored, nil
}

// deleteWork deletes a ManifestWork the cache shows as the AppConfig's, and no other: should it have
// been replaced since by a work of the same name (someone else's), that one stays.
func (r *AppConfigReconciler) deleteWork(ctx context.Context, mw *workv1.ManifestWork) error {
	err := r.Client.Delete(ctx, mw, client.Preconditions{UID: &mw.UID})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone already; a conflict on the UID says the work meant is gone too
	}
	return err
}
