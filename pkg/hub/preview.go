package hub

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// Report-only delivery. An AppConfig annotated v1alpha2.AnnotationReportOnly is rendered, overridden and
// placed as always, and delivered nothing: its ManifestWorks are neither created, updated nor deleted,
// and a rollout is not decided. Each cluster of its placement gets a preview instead — the work it
// would get, every manifest ReadOnly, annotated workreport.AnnotationReportDiff — on which the cluster's
// agent reports, per object, what applying it would change; the pass folds those reports into
// status.diff and the Previewed condition. A preview owns nothing on its cluster, so deleting it
// (the annotation removed, the cluster gone from the placement, the AppConfig deleted) deletes nothing
// there.
//
// Previews are labelled LabelPreviewOfNamespace and LabelPreviewOfName, not with the labels of the
// AppConfig's works, and indexed apart (previewIndex): the works' index, their summaries, the rollout
// and status.clusters never see them.

// previewIndex indexes cached ManifestWorks that are previews by the <namespace>/<name> of the AppConfig
// they preview.
const previewIndex = "ferry.io/preview-of"

// previewOfLabels is the AppConfig a preview's labels name, if they name one.
func previewOfLabels(o client.Object) (types.NamespacedName, bool) {
	ns, name := o.GetLabels()[LabelPreviewOfNamespace], o.GetLabels()[LabelPreviewOfName]
	return types.NamespacedName{Namespace: ns, Name: name}, ns != "" && name != ""
}

// previews returns the AppConfig's previews, one per cluster: the cache's own objects, read only.
func (r *AppConfigReconciler) previews(app *v1alpha2.ApplicationConfiguration) ([]*workv1.ManifestWork, error) {
	previews, err := r.cachedWorks.byIndex(previewIndex, client.ObjectKeyFromObject(app).String())
	if err != nil {
		return nil, fmt.Errorf("list preview ManifestWorks: %w", err)
	}
	return previews, nil
}

// previewKind is what a delivery round writes for a report-only AppConfig: its previews.
func (r *AppConfigReconciler) previewKind(app *v1alpha2.ApplicationConfiguration) workKind {
	return workKind{noun: "preview ManifestWork " + PreviewWorkName(app), reasonPrefix: "Preview", recent: &r.recentPreviews, preview: true}
}

// previewMeta is the metadata of the preview of a work whose metadata is want's: the preview's name, the
// AppConfig named by the preview's labels instead of the work's, and the work's annotations (its spec
// hash and revision, by which the preview is known to be up to date: its spec is a function of the
// work's) with AnnotationReportDiff.
func previewMeta(want metav1.ObjectMeta) metav1.ObjectMeta {
	ns, name := want.Labels[LabelAppConfigNamespace], want.Labels[LabelAppConfigName]
	labels := maps.Clone(want.Labels)
	delete(labels, LabelAppConfigNamespace)
	delete(labels, LabelAppConfigName)
	labels[LabelPreviewOfNamespace], labels[LabelPreviewOfName] = ns, name
	annotations := maps.Clone(want.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[workreport.AnnotationReportDiff] = "true"
	return metav1.ObjectMeta{Name: v1alpha2.PreviewWorkName(ns, name), Namespace: want.Namespace, Labels: labels, Annotations: annotations}
}

// previewWork is the preview of want, a cluster's work (read only): its manifests and executor (what
// the agent may read as), and one ReadOnly manifestConfig per object and nothing else — no feedback,
// no server-side apply options, no delete option (a preview owns nothing). Every manifest is covered:
// one an agent found no config for it would apply with the default strategy.
func previewWork(want *workv1.ManifestWork) (*workv1.ManifestWork, error) {
	mw := &workv1.ManifestWork{ObjectMeta: previewMeta(want.ObjectMeta)}
	mw.Spec.Workload = *want.Spec.Workload.DeepCopy() // the client decodes its answer into what it writes
	mw.Spec.Executor = want.Spec.Executor.DeepCopy()
	readOnly := func(id workv1.ResourceIdentifier) workv1.ManifestConfigOption {
		return workv1.ManifestConfigOption{ResourceIdentifier: id, UpdateStrategy: &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly}}
	}
	for _, c := range want.Spec.ManifestConfigs {
		mw.Spec.ManifestConfigs = append(mw.Spec.ManifestConfigs, readOnly(c.ResourceIdentifier))
	}
	for i, m := range want.Spec.Workload.Manifests {
		rm, err := workreport.IdentifyManifest(m)
		if err != nil {
			return nil, fmt.Errorf("manifest %d: %w", i, err)
		}
		id := workv1.ResourceIdentifier{Group: rm.Group, Resource: rm.Resource, Namespace: rm.Namespace, Name: rm.Name}
		if !coveredByConfig(mw.Spec.ManifestConfigs, rm) {
			mw.Spec.ManifestConfigs = append(mw.Spec.ManifestConfigs, readOnly(id))
		}
	}
	return mw, nil
}

// coveredByConfig reports whether one of configs names the object rm, whatever resource name it was
// mapped to (the hub's mapper knows it; the guess from the kind may differ).
func coveredByConfig(configs []workv1.ManifestConfigOption, rm workv1.ManifestResourceMeta) bool {
	for _, c := range configs {
		id := c.ResourceIdentifier
		if v1alpha2.Identifies(id, workv1.ResourceIdentifier{Group: rm.Group, Resource: id.Resource, Namespace: rm.Namespace, Name: rm.Name}) {
			return true
		}
	}
	return false
}

// writePreviews writes the preview of the work target gives each cluster of placed (overrides
// applied), where it changed, and deletes those of clusters that left the placement. fresh are the
// previews the cache shows as they are to be: their reports are about the spec previewed.
func (r *AppConfigReconciler) writePreviews(ctx context.Context, app *v1alpha2.ApplicationConfiguration, target *revisionBase,
	placed Placed) (out delivery, fresh map[string]*workv1.ManifestWork, err error) {
	key, now := client.ObjectKeyFromObject(app), time.Now()
	previews, err := r.previews(app)
	if err != nil {
		return delivery{}, nil, err
	}
	builds, err := r.newClusterWorks(ctx, app, deliveryPlan{uniform: target})
	if err != nil {
		return delivery{}, nil, err
	}
	byCluster := worksByCluster(previews)
	r.recentPreviews.forgetOld(key, cachedIn(byCluster), now)
	round := r.newDeliveryRound(app, r.previewKind(app))
	fresh = make(map[string]*workv1.ManifestWork, len(placed.Clusters))
	for _, cluster := range placed.Clusters {
		cw, err := builds.of(target, cluster)
		if err != nil {
			round.out.notOverridden = append(round.out.notOverridden, err.Error())
			continue
		}
		want := &workv1.ManifestWork{ObjectMeta: previewMeta(cw.want.ObjectMeta)}
		have := byCluster[cluster]
		if have != nil && upToDate(have, want) {
			fresh[cluster] = have
			continue
		}
		if r.recentPreviews.unseen(key, types.NamespacedName{Namespace: cluster, Name: want.Name}, have, writtenAs(want), now) {
			round.out.pending = true
			continue
		}
		round.writers.Go(func() error { round.write(ctx, cluster, cw, nil, have); return nil })
	}
	for cluster, mw := range byCluster {
		if _, wanted := slices.BinarySearch(placed.Clusters, cluster); !wanted {
			round.writers.Go(func() error { round.remove(ctx, cluster, mw, " (it left the placement)"); return nil })
		}
	}
	return round.finish(), fresh, nil
}

// deletePreviews deletes the AppConfig's previews, if it has any, why saying why in its event.
func (r *AppConfigReconciler) deletePreviews(ctx context.Context, app *v1alpha2.ApplicationConfiguration, why string) error {
	previews, err := r.previews(app)
	if err != nil || len(previews) == 0 {
		return err
	}
	round := r.newDeliveryRound(app, r.previewKind(app))
	for _, mw := range previews {
		round.writers.Go(func() error { round.remove(ctx, mw.Namespace, mw, why); return nil })
	}
	if out := round.finish(); len(out.failed) > 0 {
		return errors.New(strings.Join(out.failed, "; "))
	}
	return nil
}

// reportOnly is the pass's step for a report-only AppConfig: it writes the previews in place of the
// works, and ends the pass with what the agents reported on them. For an AppConfig delivered, it
// deletes the previews left from when it was report only, and the pass goes on to deliver.
func (r *AppConfigReconciler) reportOnly(ctx context.Context, p *appConfigPass) (bool, error) {
	if !v1alpha2.ReportOnly(p.app.Annotations) {
		return false, r.deletePreviews(ctx, p.app, " (the AppConfig is delivered again)")
	}
	written, fresh, err := r.writePreviews(ctx, p.app, p.target, *p.placed)
	if err != nil {
		return false, err
	}
	p.diff = previewedDiff(p.app.Generation, p.placed.Clusters, fresh)
	previewed := previewedCondition(p.diff)
	p.previewed = &previewed
	ready := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonReportOnly, Message: fmt.Sprintf(
		"report only (annotation %s): nothing is delivered, the clusters keep what they run; %s; remove the annotation to deliver",
		v1alpha2.AnnotationReportOnly, previewed.Message)}
	p.ready = &ready
	switch cond, notWritten := written.notReady(len(p.placed.Clusters)); {
	case notWritten:
		ready.Message += "; previews: " + cond.Message
		if len(written.failed) > 0 {
			p.err = errors.New(cond.Message)
		} else {
			p.requeueWithin(notOwnedRecheck)
		}
	case written.raced:
		p.requeueWithin(conflictRetry)
	case written.pending:
		p.requeueWithin(ownWriteFresh)
	}
	return true, nil
}

// previewedDiff is status.diff of the AppConfig at generation, placed on clusters (sorted), from the
// previews of fresh: a cluster is reported once its agent reported on its preview's generation, and
// pending until then (or while its preview is being written).
func previewedDiff(generation int64, clusters []string, fresh map[string]*workv1.ManifestWork) *v1alpha2.DiffStatus {
	d := &v1alpha2.DiffStatus{Generation: generation, Clusters: int32(len(clusters))}
	for _, cluster := range clusters {
		mw := fresh[cluster]
		if mw == nil || workreport.WorkCondition(mw.Status.Conditions, workreport.ConditionWouldChange, mw.Generation) == nil {
			if len(d.Pending) < v1alpha2.MaxClustersListed {
				d.Pending = append(d.Pending, cluster)
			}
			continue
		}
		d.Reported++
		changing := false
		for _, m := range mw.Status.ResourceStatus.Manifests {
			diff, ok := workreport.DiffOf(m.Conditions, mw.Generation)
			if !ok || !diff.Changes() {
				continue
			}
			changing = true
			d.Objects++
			if len(d.Changes) < v1alpha2.MaxDiffObjectsListed {
				d.Changes = append(d.Changes, listedDiff(cluster, m.ResourceMeta, diff))
			}
		}
		d.Changing += int32(count(changing))
	}
	return d
}

// listedDiff is an object's diff as the AppConfig's status names it: its fields cut to what the status
// lists, the fields left out counted.
func listedDiff(cluster string, rm workv1.ManifestResourceMeta, d workreport.Diff) v1alpha2.ObjectDiff {
	o := v1alpha2.ObjectDiff{Cluster: cluster, Kind: rm.Kind, Namespace: rm.Namespace, Name: rm.Name, Create: d.Create}
	for i, f := range d.Fields {
		if i == v1alpha2.MaxDiffFieldsListed {
			break
		}
		o.Fields = append(o.Fields, v1alpha2.FieldDiff{Path: f.Path, Live: f.Live, Want: f.Want})
	}
	o.MoreFields = int32(d.MoreFields + len(d.Fields) - len(o.Fields))
	return o
}

// previewedCondition is the Previewed condition of d: True once every cluster reported.
func previewedCondition(d *v1alpha2.DiffStatus) metav1.Condition {
	objects := "objects"
	if d.Objects == 1 {
		objects = "object"
	}
	c := metav1.Condition{Type: v1alpha2.ConditionPreviewed, Status: metav1.ConditionTrue, Reason: v1alpha2.ReasonWouldChange,
		Message: fmt.Sprintf("%d %s would change on %d of %d clusters", d.Objects, objects, d.Changing, d.Clusters)}
	switch {
	case d.Reported < d.Clusters:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha2.ReasonWaitingForReports
		c.Message = fmt.Sprintf("so far %d %s would change on %d of the %d clusters reported; %d of %d clusters not reported yet: %s",
			d.Objects, objects, d.Changing, d.Reported, d.Clusters-d.Reported, d.Clusters, someOf(d.Pending, maxEventNote/2))
		if unnamed := int(d.Clusters-d.Reported) - len(d.Pending); unnamed > 0 {
			c.Message += fmt.Sprintf(" and %d more", unnamed)
		}
	case d.Objects == 0:
		c.Reason = v1alpha2.ReasonNoChange
	}
	return c
}
