package workload

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// InvalidError is a manifest that cannot be applied as written; Reason says why, in the manifest's terms.
type InvalidError struct{ Reason string }

func (e *InvalidError) Error() string { return "invalid manifest: " + e.Reason }

// Normalize checks that a manifest names an object and returns a copy without the fields the API
// server owns, so that a manifest copied from `kubectl get -o yaml` applies like a hand-written one.
func Normalize(manifest *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if manifest == nil || manifest.Object == nil {
		return nil, &InvalidError{Reason: "the manifest is empty"}
	}
	if err := checkFieldTypes(manifest.Object); err != nil {
		return nil, err
	}
	var missing []string
	if manifest.GetAPIVersion() == "" {
		missing = append(missing, "apiVersion")
	}
	if manifest.GetKind() == "" {
		missing = append(missing, "kind")
	}
	if manifest.GetName() == "" {
		if manifest.GetGenerateName() != "" {
			return nil, &InvalidError{Reason: "metadata.generateName is not supported: a manifest must name its object with metadata.name"}
		}
		missing = append(missing, "metadata.name")
	}
	if len(missing) > 0 {
		return nil, &InvalidError{Reason: fmt.Sprintf("the manifest has no %v", joinAnd(missing))}
	}
	gv, err := schema.ParseGroupVersion(manifest.GetAPIVersion())
	if err != nil {
		return nil, &InvalidError{Reason: fmt.Sprintf("apiVersion %q: %v", manifest.GetAPIVersion(), err)}
	}
	if gv.Version == "" {
		// "apps/" would otherwise be mapped to whatever version the API server prefers.
		return nil, &InvalidError{Reason: fmt.Sprintf("apiVersion %q has no version: write it as group/version, or version alone for the core group", manifest.GetAPIVersion())}
	}
	// Name and namespace become segments of the request path: "web/status" would address another
	// object's subresource, and the client refuses such names with an error that looks transient.
	for field, value := range map[string]string{"metadata.name": manifest.GetName(), "metadata.namespace": manifest.GetNamespace()} {
		if value == "" {
			continue
		}
		if msgs := path.IsValidPathSegmentName(value); len(msgs) > 0 {
			return nil, &InvalidError{Reason: fmt.Sprintf("%s %q: %s", field, value, strings.Join(msgs, "; "))}
		}
	}
	out := manifest.DeepCopy()
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "deletionTimestamp",
		"deletionGracePeriodSeconds", "generation", "managedFields", "selfLink"} {
		unstructured.RemoveNestedField(out.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(out.Object, "status")
	return out, nil
}

// checkFieldTypes reports the fields that identify an object but are not of the type they must be, which
// would otherwise read as missing.
func checkFieldTypes(obj map[string]any) error {
	for _, f := range []string{"apiVersion", "kind"} {
		if v, ok := obj[f]; ok && !isString(v) {
			return &InvalidError{Reason: fmt.Sprintf("%s must be a string, not %s", f, jsonType(v))}
		}
	}
	raw, ok := obj["metadata"]
	if !ok {
		return nil
	}
	metadata, isObject := raw.(map[string]any)
	if !isObject {
		return &InvalidError{Reason: fmt.Sprintf("metadata must be an object, not %s", jsonType(raw))}
	}
	for _, f := range []string{"name", "namespace", "generateName"} {
		if v, ok := metadata[f]; ok && !isString(v) {
			return &InvalidError{Reason: fmt.Sprintf("metadata.%s must be a string, not %s", f, jsonType(v))}
		}
	}
	return nil
}

func isString(v any) bool {
	_, ok := v.(string)
	return ok
}

// jsonType names the JSON type of a decoded value, for messages.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case float64, int64, int, json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

func joinAnd(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	out := items[0]
	for _, it := range items[1 : len(items)-1] {
		out += ", " + it
	}
	return out + " and " + items[len(items)-1]
}
