package apply

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// normalize checks that a manifest names an object and returns a copy without the fields the API
// server owns, so that a manifest copied from `kubectl get -o yaml` applies like a hand-written one.
func normalize(manifest *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if manifest == nil || manifest.Object == nil {
		return nil, &InvalidManifestError{Reason: "the manifest is empty"}
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
			return nil, &InvalidManifestError{Reason: "metadata.generateName is not supported: a manifest must name its object with metadata.name"}
		}
		missing = append(missing, "metadata.name")
	}
	if len(missing) > 0 {
		return nil, &InvalidManifestError{Reason: fmt.Sprintf("the manifest has no %v", joinAnd(missing))}
	}
	if _, err := schema.ParseGroupVersion(manifest.GetAPIVersion()); err != nil {
		return nil, &InvalidManifestError{Reason: fmt.Sprintf("apiVersion %q: %v", manifest.GetAPIVersion(), err)}
	}
	out := manifest.DeepCopy()
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "deletionTimestamp",
		"deletionGracePeriodSeconds", "generation", "managedFields", "selfLink"} {
		unstructured.RemoveNestedField(out.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(out.Object, "status")
	return out, nil
}

// Hash identifies a manifest's content: equal manifests hash equal whatever the order of their keys.
func Hash(u *unstructured.Unstructured) string {
	// encoding/json writes map keys sorted, so the encoding is canonical.
	data, err := json.Marshal(u.Object)
	if err != nil {
		// An unstructured object decoded from JSON or YAML always encodes.
		panic(fmt.Sprintf("encode %s: %v", describe(u), err))
	}
	return hashBytes(data)
}

// hasOwner reports whether u lists owner (by UID) among its owner references.
func hasOwner(u *unstructured.Unstructured, owner *metav1.OwnerReference) bool {
	for _, ref := range u.GetOwnerReferences() {
		if ref.UID == owner.UID {
			return true
		}
	}
	return false
}

// withOwner returns refs with owner appended unless it is there already.
func withOwner(refs []metav1.OwnerReference, owner *metav1.OwnerReference) []metav1.OwnerReference {
	for _, ref := range refs {
		if ref.UID == owner.UID {
			return refs
		}
	}
	return append(refs, *owner)
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
