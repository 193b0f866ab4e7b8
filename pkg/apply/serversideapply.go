package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// serverSideApplyStrategy applies with server-side apply: the API server merges the manifest under the
// field manager and refuses, without force, to take fields another manager owns. To keep the steady
// state free of writes, no request is sent when the object already carries this manifest's hash and
// holds every value the manifest sets outside the fields IgnoreFields name (see ignorefields.go).
type serverSideApplyStrategy struct{}

// AppliedHashAnnotation carries, under ServerSideApply, the Hash of the manifest last applied.
const AppliedHashAnnotation = "ferry.io/applied-hash"

func (serverSideApplyStrategy) apply(ctx context.Context, r *request) (Result, error) {
	res := r.result
	// want is cfg without the ignored fields: what the object must hold for nothing to be sent.
	cfg, want, err := ignoreFields(ctx, r)
	if err != nil {
		return Result{}, err
	}
	for _, u := range []*unstructured.Unstructured{cfg, want} {
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[AppliedHashAnnotation] = res.Hash
		u.SetAnnotations(ann)
		if r.opts.Owner != nil {
			u.SetOwnerReferences(withOwner(u.GetOwnerReferences(), r.opts.Owner))
		}
	}
	if r.current != nil && r.current.GetAnnotations()[AppliedHashAnnotation] == res.Hash {
		if holds(r.current, want) {
			res.Object, res.Operation = r.current, Unchanged
			return res, nil
		}
		// This manifest was applied, and the object no longer holds it: changed on the cluster.
		res.Drift = computeDrift(r.current, want, r.opts.FieldManager)
	}
	if r.current != nil && adoptedApplied(r, want) {
		res.Object, res.Operation = r.current, Unchanged
		return res, nil
	}
	data, err := json.Marshal(cfg.Object)
	if err != nil {
		return Result{}, err
	}
	force := r.opts.Force
	obj, err := r.client.Patch(ctx, r.desired.GetName(), types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: r.opts.FieldManager, Force: &force})
	if err != nil {
		if conflict := asConflict(err); conflict != nil {
			return Result{}, conflict
		}
		return Result{}, err
	}
	res.Object, res.Operation = obj, Updated
	if r.current == nil {
		res.Operation = Created
	}
	return res, nil
}

// adoptedApplied reports that the live object was server-side applied under this field manager by
// another agent — OCM's work agent, whose field manager is "work-agent" too, before a klusterlet runs
// Ferry's image in its place — carries no hash of Ferry's, and holds every value of want but the hash.
// The manager already owns those fields, so applying again would only add the hash: a write to every
// object of a cluster that changes agents. The hash comes with the first change of the manifest.
func adoptedApplied(r *request, want *unstructured.Unstructured) bool {
	if _, ok := r.current.GetAnnotations()[AppliedHashAnnotation]; ok {
		return false
	}
	applied := false
	for _, f := range r.current.GetManagedFields() {
		if f.Manager == r.opts.FieldManager && f.Operation == metav1.ManagedFieldsOperationApply {
			applied = true
		}
	}
	if !applied {
		return false
	}
	rest := want.DeepCopy()
	ann := rest.GetAnnotations()
	delete(ann, AppliedHashAnnotation)
	if len(ann) == 0 {
		ann = nil // no annotations at all is what the live object may have
	}
	rest.SetAnnotations(ann)
	return holds(r.current, rest)
}

// holds reports whether the live object already holds everything cfg sets. Owner references are a set
// (other works add theirs), the rest is compared by contains.
func holds(live, cfg *unstructured.Unstructured) bool {
	for _, ref := range cfg.GetOwnerReferences() {
		if !hasOwner(live, &ref) {
			return false
		}
	}
	rest := cfg.DeepCopy()
	unstructured.RemoveNestedField(rest.Object, "metadata", "ownerReferences")
	return contains(live.Object, rest.Object)
}

// contains reports whether every value set in want is set equally in have: maps by key, lists
// element by element, scalars by value (numbers by numeric value).
func contains(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok {
				if wv == nil {
					continue
				}
				return false
			}
			if !contains(hv, wv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !contains(h[i], w[i]) {
				return false
			}
		}
		return true
	case int64, float64, int, int32:
		hf, ok1 := number(have)
		wf, ok2 := number(want)
		return ok1 && ok2 && hf == wf
	default:
		return have == want
	}
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// FieldConflict is one field another manager owns.
type FieldConflict struct {
	Field   string // e.g. ".spec.replicas"
	Manager string // e.g. "hpa-controller"; empty when the API server did not say
}

// ConflictError is a server-side apply refused because other field managers own fields the manifest
// sets. Apply with force to take them, or remove the fields from the manifest.
type ConflictError struct {
	Conflicts []FieldConflict
	err       error
}

func (e *ConflictError) Error() string {
	parts := make([]string, 0, len(e.Conflicts))
	for _, c := range e.Conflicts {
		if c.Manager != "" {
			parts = append(parts, fmt.Sprintf("%s is owned by %q", c.Field, c.Manager))
		} else {
			parts = append(parts, c.Field+" is owned by another manager")
		}
	}
	return fmt.Sprintf("field ownership conflict: %s; remove these fields from the manifest or apply with force",
		strings.Join(parts, ", "))
}

func (e *ConflictError) Unwrap() error { return e.err }

// IsConflict reports whether err is a ConflictError.
func IsConflict(err error) bool {
	var e *ConflictError
	return errors.As(err, &e)
}

// asConflict turns the API server's field-manager conflict into a ConflictError, or returns nil.
func asConflict(err error) *ConflictError {
	var status apierrors.APIStatus
	if !apierrors.IsConflict(err) || !errors.As(err, &status) {
		return nil
	}
	details := status.Status().Details
	if details == nil {
		return nil
	}
	c := &ConflictError{err: err}
	for _, cause := range details.Causes {
		if cause.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		c.Conflicts = append(c.Conflicts, FieldConflict{Field: cause.Field, Manager: managerOf(cause.Message)})
	}
	if len(c.Conflicts) == 0 {
		return nil
	}
	sort.Slice(c.Conflicts, func(i, j int) bool { return c.Conflicts[i].Field < c.Conflicts[j].Field })
	return c
}

// managerOf reads the manager from a conflict cause message: `conflict with "hpa" using apps/v1`.
func managerOf(msg string) string {
	_, rest, ok := strings.Cut(msg, `conflict with "`)
	if !ok {
		return ""
	}
	name, _, ok := strings.Cut(rest, `"`)
	if !ok {
		return ""
	}
	return name
}
