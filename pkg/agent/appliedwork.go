package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apply"
)

// forceHashesAnnotation keeps, on the AppliedManifestWork, the hash of the manifest last applied to
// each ApplyOnceForce object, so that an object deleted on the spoke stays deleted across agent
// restarts until its manifest changes.
const forceHashesAnnotation = "ferry.io/apply-once-force-hashes"

// HubHash identifies a hub by its API server URL, as AppliedManifestWork names and spec.hubHash do.
func HubHash(hubURL string) string {
	sum := sha256.Sum256([]byte(hubURL))
	return hex.EncodeToString(sum[:])
}

func (c *controller) appliedWorkName(work string) string { return c.hubHash + "-" + work }

// ensureFinalizer puts the cleanup finalizer on the work, so that deleting it waits for the agent.
func (c *controller) ensureFinalizer(ctx context.Context, work *workv1.ManifestWork) (*workv1.ManifestWork, error) {
	if slices.Contains(work.Finalizers, workv1.ManifestWorkFinalizer) {
		return work, nil
	}
	patched, err := c.works.Patch(ctx, work.Name, types.MergePatchType, finalizersPatch(work.ObjectMeta, append(slices.Clone(work.Finalizers), workv1.ManifestWorkFinalizer)), metav1.PatchOptions{})
	if err != nil {
		return nil, err
	}
	c.freshWorks.wrote(work.ResourceVersion, patched)
	return patched, nil
}

// finalizersPatch is a merge patch setting the finalizers, guarded by the resourceVersion they were
// read at so that a concurrent change is not lost.
func finalizersPatch(m metav1.ObjectMeta, finalizers []string) []byte {
	if finalizers == nil {
		finalizers = []string{}
	}
	p, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers": finalizers, "resourceVersion": m.ResourceVersion,
	}})
	return p
}

// errAppliedWorkBeingDeleted: objects applied with an AppliedManifestWork that is being deleted (evicted,
// or deleted by hand) as their owner would be deleted with it, so the work waits until it is gone — its
// deletion enqueues the work — and then gets a fresh one.
var errAppliedWorkBeingDeleted = errors.New("it is being deleted; the work is applied again, with a fresh one, once it is gone")

// ensureAppliedWork returns the AppliedManifestWork to apply the work with: the existing one, adopted
// again if eviction had marked it, or a new one. It never returns one that is being deleted (see the
// comment at the top of eviction.go).
func (c *controller) ensureAppliedWork(ctx context.Context, work *workv1.ManifestWork) (*workv1.AppliedManifestWork, error) {
	name := c.appliedWorkName(work.Name)
	amw, err := c.amwLister.Get(name)
	if apierrors.IsNotFound(err) {
		amw, err = c.createAppliedWork(ctx, work)
	} else if err == nil {
		amw = c.freshAMWs.pick(amw)
	}
	if err != nil {
		return nil, err
	}
	if amw.Spec.AgentID != c.agentID || amw.Spec.ManifestWorkName != work.Name {
		if cluster := amw.Annotations[clusterAnnotation]; amw.Spec.ManifestWorkName != work.Name || (cluster != "" && cluster != c.cluster) {
			// Another cluster's record (another cluster of the same hub, joined to this spoke
			// before): adopting it would remove that cluster's objects.
			return nil, &appliedWorkOfAnotherClusterError{fmt.Sprintf(
				"AppliedManifestWork %s on the cluster belongs to agent %q of cluster %q, not to this agent %q of cluster %q: nothing of the work is applied; delete that AppliedManifestWork if its agent is gone, or rename the work",
				name, amw.Spec.AgentID, cluster, c.agentID, c.cluster)}
		}
		// The record of an earlier agent of this cluster: OCM's work agent (the klusterlet passes its
		// own agent ID), or ferry-agent under another --agent-id. It is adopted, as OCM's agent
		// adopts it, with everything it applied: nothing is deleted or created again.
		if amw, err = c.adoptAppliedWork(ctx, amw); err != nil {
			return nil, err
		}
	}
	if amw.DeletionTimestamp != nil {
		return nil, fmt.Errorf("AppliedManifestWork %s: %w", name, errAppliedWorkBeingDeleted)
	}
	if amw.Status.EvictionStartTime != nil {
		if amw, err = c.adoptMarkedAppliedWork(ctx, work, amw); err != nil {
			return nil, err
		}
	}
	return c.syncAppliedWorkLabels(ctx, work, amw)
}

// syncAppliedWorkLabels gives the AppliedManifestWork the work's labels, as OCM's agent does when it
// creates one, and keeps them in step when the work's change, so that a spoke's admin can select the
// AppliedManifestWorks of an application by the labels its works carry.
func (c *controller) syncAppliedWorkLabels(ctx context.Context, work *workv1.ManifestWork, amw *workv1.AppliedManifestWork) (*workv1.AppliedManifestWork, error) {
	if maps.Equal(work.Labels, amw.Labels) {
		return amw, nil
	}
	labels := map[string]any{}
	for k := range amw.Labels {
		labels[k] = nil
	}
	for k, v := range work.Labels {
		labels[k] = v
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	updated, err := c.amws.Patch(ctx, amw.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("copy the work's labels to AppliedManifestWork %s: %w", amw.Name, err)
	}
	c.freshAMWs.wrote(amw.ResourceVersion, updated)
	return updated, nil
}

// appliedWorkOfAnotherClusterError: the work's AppliedManifestWork name is taken on the spoke by another
// cluster's agent (two clusters of one hub joined to one spoke, with works of the same name).
type appliedWorkOfAnotherClusterError struct{ message string }

func (e *appliedWorkOfAnotherClusterError) Error() string { return e.message }

// ReasonAppliedWorkOfAnotherCluster: the work is not applied, its AppliedManifestWork's name being
// another cluster's on the spoke.
const ReasonAppliedWorkOfAnotherCluster = "AppliedManifestWorkOfAnotherCluster"

// reportNotApplied writes the work's Applied condition False with reason and message, when it says
// anything else, so that the hub sees why nothing of the work is applied.
func (c *controller) reportNotApplied(ctx context.Context, work *workv1.ManifestWork, reason, message string) error {
	if cond := meta.FindStatusCondition(work.Status.Conditions, workv1.WorkApplied); cond != nil &&
		cond.Status == metav1.ConditionFalse && cond.Reason == reason && cond.Message == message && cond.ObservedGeneration == work.Generation {
		return nil
	}
	status := *work.Status.DeepCopy()
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionFalse,
		Reason: reason, Message: message, ObservedGeneration: work.Generation})
	_, err := c.patchStatus(ctx, work, status)
	return err
}

// clusterAnnotation, on an AppliedManifestWork ferry-agent created, names the managed cluster it
// applies works for, so that an agent of another cluster of the same hub, joined to the same spoke, never
// adopts it. OCM's agent writes none: its records are adopted.
const clusterAnnotation = "ferry.io/cluster"

// adoptAppliedWork makes an earlier agent's AppliedManifestWork of this cluster this agent's.
func (c *controller) adoptAppliedWork(ctx context.Context, amw *workv1.AppliedManifestWork) (*workv1.AppliedManifestWork, error) {
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": amw.ResourceVersion, "annotations": map[string]any{clusterAnnotation: c.cluster}},
		"spec":     map[string]any{"agentID": c.agentID},
	})
	adopted, err := c.amws.Patch(ctx, amw.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("adopt AppliedManifestWork %s of agent %q: %w", amw.Name, amw.Spec.AgentID, err)
	}
	c.freshAMWs.wrote(amw.ResourceVersion, adopted)
	c.log.Info("adopted the AppliedManifestWork of an earlier agent of this cluster, with what it applied",
		"appliedManifestWork", amw.Name, "agentID", amw.Spec.AgentID, "resources", len(amw.Status.AppliedResources))
	return adopted, nil
}

// createAppliedWork creates the work's AppliedManifestWork, or reads it live when it exists already.
func (c *controller) createAppliedWork(ctx context.Context, work *workv1.ManifestWork) (*workv1.AppliedManifestWork, error) {
	amw := &workv1.AppliedManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: c.appliedWorkName(work.Name), Labels: work.Labels, Finalizers: []string{workv1.AppliedManifestWorkFinalizer},
			Annotations: map[string]string{clusterAnnotation: c.cluster}},
		Spec: workv1.AppliedManifestWorkSpec{HubHash: c.hubHash, AgentID: c.agentID, ManifestWorkName: work.Name},
	}
	created, err := c.amws.Create(ctx, amw, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// The informer has not seen it yet.
		if created, err = c.amws.Get(ctx, amw.Name, metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("read AppliedManifestWork %s: %w", amw.Name, err)
		}
		return created, nil
	}
	if err != nil {
		return nil, fmt.Errorf("create AppliedManifestWork %s: %w", amw.Name, err)
	}
	return created, nil
}

// adoptMarkedAppliedWork unmarks an AppliedManifestWork that eviction marked, before anything is applied
// with it. The write changes its resourceVersion, so an eviction that examined it marked fails its
// precondition; if eviction claimed it first, this write fails instead and the work is retried, to find
// it being deleted.
func (c *controller) adoptMarkedAppliedWork(ctx context.Context, work *workv1.ManifestWork, amw *workv1.AppliedManifestWork) (*workv1.AppliedManifestWork, error) {
	updated, err := c.patchAppliedWorkStatus(ctx, amw, map[string]any{"evictionStartTime": nil})
	if err != nil {
		return nil, fmt.Errorf("adopt AppliedManifestWork %s marked for eviction again: %w", amw.Name, err)
	}
	c.freshAMWs.wrote(amw.ResourceVersion, updated)
	c.log.Info("ManifestWork delivered again: its AppliedManifestWork is no longer marked for eviction",
		"work", work.Name, "appliedManifestWork", amw.Name, "markedSince", amw.Status.EvictionStartTime.Time)
	return updated, nil
}

func readForceHashes(amw *workv1.AppliedManifestWork) map[string]string {
	out := map[string]string{}
	if v := amw.Annotations[forceHashesAnnotation]; v != "" {
		_ = json.Unmarshal([]byte(v), &out) // a damaged record re-applies, which is the safe side
	}
	return out
}

// identityKey names the object of a result, as group/resource/namespace/name.
func identityKey(r *manifestResult) string {
	return r.meta.Group + "/" + r.meta.Resource + "/" + r.meta.Namespace + "/" + r.meta.Name
}

func appliedKey(a workv1.AppliedManifestResourceMeta) string {
	return a.Group + "/" + a.Resource + "/" + a.Namespace + "/" + a.Name
}

// syncAppliedWork records what the work applied in its AppliedManifestWork and removes from the spoke
// what the work no longer holds.
func (c *controller) syncAppliedWork(ctx context.Context, work *workv1.ManifestWork, amw *workv1.AppliedManifestWork, results []manifestResult) (removing bool, err error) {
	previous := map[string]workv1.AppliedManifestResourceMeta{}
	for _, a := range amw.Status.AppliedResources {
		previous[appliedKey(a)] = a
	}

	var applied []workv1.AppliedManifestResourceMeta
	keep := map[string]bool{}
	forced := readForceHashes(amw)
	newForced := map[string]string{}
	for i := range results {
		r := &results[i]
		if r.Object == nil {
			continue
		}
		if r.meta.Resource == "" {
			// Not mapped this round (an unknown kind, a failed discovery): whatever this manifest applied
			// before is kept, matched without the resource.
			for k, a := range previous {
				if a.Group == r.meta.Group && a.Name == r.meta.Name && (a.Namespace == r.meta.Namespace || a.Namespace == "") {
					keep[k] = true
				}
			}
			continue
		}
		key := identityKey(r)
		keep[key] = true
		if r.config != nil && r.config.UpdateStrategy != nil && r.config.UpdateStrategy.Type == workv1.UpdateStrategyType(apply.ApplyOnceForce) {
			switch {
			case r.err == nil && !r.reportOnly && (r.result.Operation == apply.Created || r.result.Operation == apply.Updated || r.result.Operation == apply.Skipped):
				newForced[key] = r.result.Hash
			case forced[key] != "":
				newForced[key] = forced[key]
			}
		}
		if r.readOnly() {
			continue // never applied, never removed
		}
		if r.exists() {
			applied = append(applied, workv1.AppliedManifestResourceMeta{
				ResourceIdentifier: workv1.ResourceIdentifier{Group: r.meta.Group, Resource: r.meta.Resource, Namespace: r.meta.Namespace, Name: r.meta.Name},
				Version:            r.result.Resource.Version,
				UID:                string(r.result.Object.GetUID()),
			})
		} else if a, ok := previous[key]; ok {
			applied = append(applied, a) // the apply failed; it is still this work's
		}
	}

	// What the work no longer holds is removed from the spoke; an entry stays listed until that is done.
	// A round in which some apply failed for a passing reason removes nothing: a manifest that could not
	// be resolved this time must not look removed.
	transient := false
	for i := range results {
		transient = transient || retriable(results[i].err)
	}
	client, err := c.removalClient(work)
	if err != nil {
		transient = true // an invalid executor removes nothing
	}
	for key, a := range previous {
		if keep[key] || transient {
			if !containsKey(applied, key) {
				applied = append(applied, a)
			}
			continue
		}
		gone, left, err := c.removeResource(ctx, client, amw, a, orphaned(work.Spec.DeleteOption, a.ResourceIdentifier), manifestLeftWork(work))
		if err != nil {
			c.log.Error(err, "remove a resource the work no longer holds", "work", work.Name, "resource", key)
		}
		if left != nil {
			c.events.orphaned(left, manifestLeftWork(work))
		}
		if !gone {
			applied = append(applied, a)
			removing = true
		}
	}
	slices.SortFunc(applied, func(x, y workv1.AppliedManifestResourceMeta) int {
		return strings.Compare(appliedKey(x), appliedKey(y))
	})

	forcedJSON := ""
	if len(newForced) > 0 {
		b, _ := json.Marshal(newForced)
		forcedJSON = string(b)
	}
	if forcedJSON != amw.Annotations[forceHashesAnnotation] {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{forceHashesAnnotation: nullIfEmpty(forcedJSON)}}})
		updated, err := c.amws.Patch(ctx, amw.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return removing, fmt.Errorf("record ApplyOnceForce hashes: %w", err)
		}
		c.freshAMWs.wrote(amw.ResourceVersion, updated)
		amw = updated
	}
	if equality.Semantic.DeepEqual(applied, amw.Status.AppliedResources) || (len(applied) == 0 && len(amw.Status.AppliedResources) == 0) {
		return removing, nil
	}
	updated, err := c.patchAppliedWorkStatus(ctx, amw, map[string]any{"appliedResources": applied})
	if err != nil {
		return removing, fmt.Errorf("update AppliedManifestWork status: %w", err)
	}
	c.freshAMWs.wrote(amw.ResourceVersion, updated)
	return removing, nil
}

// patchAppliedWorkStatus sets fields of amw's status by a merge patch of the status subresource that
// holds only as long as amw is as read (its resourceVersion): the agent's eviction and its works'
// reconciles write the same AppliedManifestWork, and each must lose, and look again, when the other
// wrote since. The patch carries only what changes, where an Update sent the whole object.
func (c *controller) patchAppliedWorkStatus(ctx context.Context, amw *workv1.AppliedManifestWork, fields map[string]any) (*workv1.AppliedManifestWork, error) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": amw.ResourceVersion}, "status": fields})
	if err != nil {
		return nil, fmt.Errorf("encode the status patch of AppliedManifestWork %s: %w", amw.Name, err)
	}
	return c.amws.Patch(ctx, amw.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
}

func containsKey(list []workv1.AppliedManifestResourceMeta, key string) bool {
	for _, a := range list {
		if appliedKey(a) == key {
			return true
		}
	}
	return false
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
