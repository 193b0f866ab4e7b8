package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/apply"
	"github.com/ferry-mc/ferry/pkg/workload"
)

// manifestResult is what happened to one manifest in one reconcile.
type manifestResult struct {
	workload.Manifest
	meta    workv1.ManifestResourceMeta
	config  *workv1.ManifestConfigOption
	result  apply.Result
	err     error
	waiting string // set when the manifest was held back: why
	// feedback values and the error of the rules that could not be evaluated
	feedback    []workv1.FeedbackValue
	feedbackErr error
	// health: the object's Progressing, Degraded, Complete and conditionRules conditions
	health []metav1.Condition
	// completed: the manifest was Complete, so it was only read, not applied
	completed bool
	// reportOnly: the work is a report-only delivery (reportOnly), so the manifest was only read, and
	// compared with the object it read
	reportOnly bool
}

// identifier names the manifest's object by resource, as manifestConfigs and deleteOption rules do.
func (r *manifestResult) identifier() workv1.ResourceIdentifier {
	return workv1.ResourceIdentifier{Group: r.meta.Group, Resource: r.meta.Resource, Namespace: r.meta.Namespace, Name: r.meta.Name}
}

// readOnly reports whether the manifest is only read, never written: its manifestConfig says ReadOnly or
// its work is report-only. A Complete manifest is read only too, but remains the work's (applied before).
func (r *manifestResult) readOnly() bool {
	return r.reportOnly || optionsFor(r.config).Strategy == apply.ReadOnly
}

// exists reports whether the manifest's object is on the spoke after this reconcile.
func (r *manifestResult) exists() bool { return r.result.Object != nil }

var (
	crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crdGK  = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
)

// applyAll applies every manifest of the work, Namespaces and CRDs first, and returns one result per
// manifest in spec order.
func (c *controller) applyAll(ctx context.Context, work *workv1.ManifestWork, amw *workv1.AppliedManifestWork) ([]manifestResult, nextStep) {
	ms := rejectConflictingDuplicates(workload.Decode(work))
	applier, err := c.executors.applierFor(work)
	if applier == nil || err != nil {
		applier = c.applier // an invalid executor fails each manifest in authorize
	}
	a := &workApply{
		work:    work,
		applier: applier,
		results: make([]manifestResult, len(ms)),
		owner: &metav1.OwnerReference{
			APIVersion: workv1.GroupVersion.String(), Kind: "AppliedManifestWork", Name: amw.Name, UID: amw.UID,
		},
		forced:  readForceHashes(amw),
		pending: map[schema.GroupKind]string{},
	}
	for _, crd := range crdsIn(ms) {
		a.pending[crd.kind] = crd.name
	}
	// Namespaces and CRDs one by one, first (only then is a.pending written), then everything else a few
	// at a time; each manifest's outcome goes to its own result (by ordinal).
	objs := make([]*unstructured.Unstructured, len(ms))
	for i, m := range ms {
		objs[i] = m.Object
	}
	c.settled.fit(work.Name, len(ms))
	apply.ApplyAll(ctx, objs, applyParallelism, func(ctx context.Context, i int) { c.applyOne(ctx, a, ms[i]) })
	return a.results, a.next
}

// applyParallelism bounds the objects of one work applied at the same time.
const applyParallelism = 8

// workApply is one reconcile's application of a work's manifests.
type workApply struct {
	work    *workv1.ManifestWork
	applier *apply.Applier   // the agent's, or the executor's (ExecutorImpersonate)
	results []manifestResult // by ordinal; each written by the one goroutine applying that manifest
	owner   *metav1.OwnerReference
	forced  map[string]string
	// Kinds defined by a CRD of this work that is not Established yet, with the CRD's name. Written
	// only while Namespaces and CRDs are applied, one at a time.
	pending map[schema.GroupKind]string

	mu   sync.Mutex
	next nextStep
}

func (a *workApply) retry() {
	a.mu.Lock()
	a.next.retry = true
	a.mu.Unlock()
}

// after asks for the work to be looked at again within d.
func (a *workApply) after(d time.Duration) {
	a.mu.Lock()
	if a.next.after == 0 || d < a.next.after {
		a.next.after = d
	}
	a.mu.Unlock()
}

// applyOne applies one manifest and records its result.
func (c *controller) applyOne(ctx context.Context, a *workApply, m workload.Manifest) {
	r := &a.results[m.Ordinal]
	defer countApply(r)
	r.Manifest = m
	r.meta.Ordinal = m.Ordinal
	if m.DecodeErr != nil {
		r.err = &apply.InvalidManifestError{Reason: m.DecodeErr.Error()}
		return
	}
	gvk := m.Object.GroupVersionKind()
	r.meta.Group, r.meta.Version, r.meta.Kind = gvk.Group, gvk.Version, gvk.Kind
	r.meta.Name, r.meta.Namespace = m.Object.GetName(), m.Object.GetNamespace()
	if crd, held := a.pending[gvk.GroupKind()]; held && !c.crds.waitFor(gvk.GroupKind(), a.work.Name) {
		// The CRD's watch requeues the work once it is Established: no worker waits for it.
		r.waiting = fmt.Sprintf("waiting for CustomResourceDefinition %s to be established", crd)
		return
	}
	// The strategy, the manifestConfig and the watch are chosen by the resource the kind maps to: only
	// an authoritative mapping may decide them, never a guess from a mapper that is behind the spoke.
	mapping, state, err := c.resolveMapping(gvk)
	switch {
	case err != nil:
		r.err = err
		a.retry()
		return
	case state == kindPending:
		r.waiting = fmt.Sprintf("waiting for the cluster to serve %s in %s", gvk.Kind, gvk.GroupVersion())
		a.after(time.Second) // discovery lags its CRD by moments
		return
	case state == kindUnknown:
		r.err = &apply.UnknownKindError{GVK: gvk}
		c.crds.waitFor(gvk.GroupKind(), a.work.Name) // applied as soon as a CRD brings the kind
		return
	}
	ns := r.meta.Namespace
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		ns = ""
	}
	r.meta.Resource, r.meta.Namespace = mapping.Resource.Resource, ns
	r.config = v1alpha2.ManifestConfigFor(a.work.Spec.ManifestConfigs, r.identifier())
	if c.watches != nil && (ns != "" || mapping.Scope.Name() != meta.RESTScopeNameNamespace) {
		// (A namespaced manifest without a namespace fails below; it must not start a cluster-wide watch.)
		c.watches.watch(mapping.Resource, ns)
	}
	opts := optionsFor(r.config)
	opts.Mapping = mapping
	if r.completed = manifestComplete(a.work, r.meta); r.completed {
		// A finished Job or Pod is not applied again (nor re-created once cleaned up on the spoke): it
		// is only read, for its status.
		opts.Strategy = apply.ReadOnly
	}
	if r.reportOnly = reportOnly(a.work); r.reportOnly {
		// Whatever its updateStrategy says, nothing of a report-only work is written: its objects are
		// read, and compared with their manifests, from that one read.
		opts.Strategy, opts.ReportDiff = apply.ReadOnly, true
	}
	// An object the work orphans never carries its owner reference, so that neither the work's
	// deletion nor the manifest's removal from the work takes the object with it.
	owned := !orphaned(a.work.Spec.DeleteOption, r.identifier())
	if opts.Strategy != apply.ReadOnly && owned {
		opts.Owner = a.owner
	}
	if err := c.executors.authorize(ctx, a.work, mapping.Resource, ns, r.meta.Name, opts.Strategy, owned, m.Object); err != nil {
		r.err = err
		if isExecutorDenied(err) {
			a.after(executorRetry) // a change of RBAC brings it back sooner
		}
		return
	}
	if opts.Strategy == apply.ApplyOnceForce {
		opts.AppliedHash = a.forced[identityKey(r)]
	}
	if c.heldByAnotherWork(a.work.Name, r, m.Object, opts) {
		return
	}
	settledAs := settledKey{generation: a.work.Generation, resource: mapping.Resource, owner: a.owner.UID, completed: r.completed,
		forced: opts.AppliedHash, reportOnly: r.reportOnly}
	if c.applySettled(a.work.Name, r, settledAs, ns) {
		return
	}
	started := time.Now()
	r.result, r.err = a.applier.Apply(ctx, m.Object, opts)
	if r.err = c.executors.refused(a.work, r.err, mapping.Resource, ns, r.meta.Name); isExecutorDenied(r.err) {
		a.after(executorRetry)
	}
	observeApplyDuration(opts.Strategy, time.Since(started))
	if r.result.Resource.Resource != "" { // mapped: the resource and its scope are known
		r.meta.Resource = r.result.Resource.Resource
		if !r.result.Namespaced {
			r.meta.Namespace = ""
		}
	}
	if r.err == nil && !owned && r.exists() && opts.Strategy != apply.ReadOnly {
		// Applied while the work owned it, orphaned since: let go of it now.
		r.err = c.disown(ctx, a.work, r.result, a.owner.UID)
	}
	if retriable(r.err) {
		a.retry()
	}
	if r.err == nil && gvk.GroupKind() == crdGK {
		if kind, ok := crdKind(r.result.Object); ok && established(r.result.Object) {
			delete(a.pending, kind)
		}
	}
	if r.exists() {
		var rules []workv1.ConditionRule
		if r.config != nil {
			rules = r.config.ConditionRules
		}
		r.health = c.health.Conditions(r.result.Object, rules, a.work.Generation)
	}
	if r.exists() && r.config != nil && len(r.config.FeedbackRules) > 0 {
		r.feedback, r.feedbackErr = c.feedback.Evaluate(r.result.Object, r.config.FeedbackRules)
		if len(r.feedback) == 0 {
			r.feedback = nil // as the API server returns it, so that status compares equal
		}
	}
	if c.watches != nil {
		c.settled.record(a.work.Name, settledAs, r)
	}
}

// applySettled fills r from the manifest's last apply that wrote nothing, when the object's watch shows
// it unchanged since and the work asks for the same (see unchangedApplyCache), and reports whether it did.
// Without a synced watch of the object nothing is taken as settled: it is read.
func (c *controller) applySettled(work string, r *manifestResult, key settledKey, namespace string) bool {
	if c.watches == nil {
		return false
	}
	current, known := c.watches.objectMeta(key.resource, namespace, r.meta.Name)
	if !known {
		return false
	}
	kept, ok := c.settled.lookup(work, r.Ordinal, key, current)
	if !ok {
		return false
	}
	r.result, r.health, r.feedback, r.feedbackErr = kept.result, kept.health.conditions(), kept.feedback, kept.feedbackErr
	settledApplies.Inc()
	return true
}

// optionsFor turns a manifest's configuration into apply options.
func optionsFor(cfg *workv1.ManifestConfigOption) apply.Options {
	opts := apply.Options{Strategy: apply.Update}
	if cfg == nil || cfg.UpdateStrategy == nil {
		return opts
	}
	opts.Strategy = apply.StrategyType(cfg.UpdateStrategy.Type)
	if ssa := cfg.UpdateStrategy.ServerSideApply; ssa != nil && opts.Strategy == apply.ServerSideApply {
		opts.FieldManager = ssa.FieldManager
		opts.Force = ssa.Force
		for _, f := range ssa.IgnoreFields {
			opts.IgnoreFields = append(opts.IgnoreFields, apply.IgnoreField{
				Condition:         apply.IgnoreCondition(f.Condition),
				JSONPaths:         f.JSONPaths,
				JSONPointers:      f.JSONPointers,
				JQPathExpressions: f.JQPathExpressions,
			})
		}
	}
	return opts
}

// retriable reports whether an apply error may go away by itself, so that the work is retried with
// backoff rather than at the next resync.
func retriable(err error) bool {
	if err == nil || apply.IsInvalidManifest(err) || apply.IsUnknownKind(err) || isObjectOwnedByAnotherWork(err) || isExecutorDenied(err) {
		return false
	}
	if invalid := (*invalidExecutorError)(nil); errors.As(err, &invalid) {
		return false
	}
	if apply.IsConflict(err) {
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return apierrors.IsConflict(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
			apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) ||
			apierrors.IsUnexpectedServerError(err) || apierrors.IsAlreadyExists(err)
	}
	return !errors.Is(err, context.Canceled) // network errors and the like
}

type crdRef struct {
	name string
	kind schema.GroupKind
}

// crdsIn lists the CRDs among the manifests and the kinds they define.
func crdsIn(ms []workload.Manifest) []crdRef {
	var out []crdRef
	for _, m := range ms {
		if m.Object == nil || m.Object.GroupVersionKind().GroupKind() != crdGK {
			continue
		}
		if kind, ok := crdKind(m.Object); ok {
			out = append(out, crdRef{name: m.Object.GetName(), kind: kind})
		}
	}
	return out
}

func crdKind(crd *unstructured.Unstructured) (schema.GroupKind, bool) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	return schema.GroupKind{Group: group, Kind: kind}, kind != ""
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
