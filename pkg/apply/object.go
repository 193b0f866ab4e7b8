package apply

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

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
