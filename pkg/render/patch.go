package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Patch traits change the workload itself. Their patches are merged into the component's
// spec before the workload is emitted, so the workload is created or changed once, with all of them.
const (
	// InlinePatchKind is Ferry's built-in patch trait (apiVersion core.oam.dev/v1alpha2): its spec is
	// the patch, the same document a patch trait's ConfigMap holds. It needs no TraitDefinition and no
	// controller, and is never delivered.
	InlinePatchKind = "WorkloadPatch"
)

// Patch is one patch to merge into a workload: a JSON object (a strategic merge patch for the
// built-in Kubernetes kinds, a JSON merge patch for others) or a JSON array (an RFC 6902 JSON patch).
type Patch struct {
	// Source names where the patch comes from, for messages: e.g. "NodeSelector prod/shop-web-nodeselector".
	Source string
	Data   []byte
}

// PatchesPendingError is a component whose patch traits have not all published their patch: its
// workload is held back so that it never runs without them.
type PatchesPendingError struct {
	Component string
	Waiting   []string // the traits not Ready yet, each with why
	// Traits are the component's patch-trait objects as wanted: the caller publishes them on the hub
	// (creating or updating those not there as wanted), and their controllers publish the patches.
	Traits []*unstructured.Unstructured
}

func (e *PatchesPendingError) Error() string {
	return fmt.Sprintf("component %q: waiting for patch traits: %s", e.Component, strings.Join(e.Waiting, "; "))
}

// isInlinePatch reports whether trait is Ferry's built-in WorkloadPatch.
func isInlinePatch(trait *unstructured.Unstructured) bool {
	gvk := trait.GroupVersionKind()
	return gvk.Group == "core.oam.dev" && gvk.Kind == InlinePatchKind
}

// inlinePatch is the patch of a WorkloadPatch trait: its spec.
func inlinePatch(trait *unstructured.Unstructured) (Patch, error) {
	spec, ok := trait.Object["spec"]
	if !ok {
		return Patch{}, fmt.Errorf("%s has no spec: its spec is the patch merged into the workload", InlinePatchKind)
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return Patch{}, err
	}
	return Patch{Source: InlinePatchKind, Data: data}, nil
}

// applyPatch merges p into workload, in place.
func applyPatch(workload *unstructured.Unstructured, p Patch) error {
	doc, err := json.Marshal(workload.Object)
	if err != nil {
		return err
	}
	data := bytes.TrimSpace(p.Data)
	var out []byte
	switch {
	case len(data) > 0 && data[0] == '[':
		patch, err := jsonpatch.DecodePatch(data)
		if err != nil {
			return fmt.Errorf("patch of %s is not a JSON patch: %w", p.Source, err)
		}
		if out, err = patch.Apply(doc); err != nil {
			return fmt.Errorf("JSON patch of %s: %w", p.Source, err)
		}
	case len(data) > 0 && data[0] == '{':
		// A strategic merge keeps list items merged by key (a sidecar patch adds a container instead of
		// replacing the list), as kubectl does for the kinds it knows.
		if typed, err := clientgoscheme.Scheme.New(workload.GroupVersionKind()); err == nil {
			if out, err = strategicpatch.StrategicMergePatch(doc, data, typed); err != nil {
				return fmt.Errorf("merge patch of %s: %w", p.Source, err)
			}
		} else if out, err = jsonpatch.MergePatch(doc, data); err != nil {
			return fmt.Errorf("merge patch of %s: %w", p.Source, err)
		}
	default:
		return fmt.Errorf("patch of %s is neither a JSON object (merge patch) nor a JSON array (JSON patch)", p.Source)
	}
	obj := map[string]any{}
	if err := json.Unmarshal(out, &obj); err != nil {
		return fmt.Errorf("patch of %s: %w", p.Source, err)
	}
	workload.Object = obj
	return nil
}
