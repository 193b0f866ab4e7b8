package apply

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-mc/ferry/pkg/workload"
)

// RecordHash is the hash of the last-applied record Apply writes for manifest under Update, ApplyOnce
// and ApplyOnceForce: the manifest normalized as Apply normalizes it, without a namespace when its
// resource is cluster-scoped. Compared with AppliedHash of an object, it tells without applying anything
// whether the object was last applied with this very manifest.
func RecordHash(manifest *unstructured.Unstructured, namespaced bool) (string, error) {
	desired, err := workload.Normalize(manifest)
	if err != nil {
		return "", err
	}
	if !namespaced {
		desired.SetNamespace("")
	}
	return workload.Hash(desired), nil
}

// AppliedHash is the hash of the last-applied record an object carries in annotations, or "" when it
// has none (an object written under ServerSideApply or CreateOnly, or by someone else).
func AppliedHash(annotations map[string]string) string {
	if v, ok := annotations[LastAppliedAnnotation]; ok {
		return workload.HashBytes([]byte(v))
	}
	if v, ok := annotations[LastAppliedRefAnnotation]; ok {
		if i := strings.LastIndexByte(v, '/'); i >= 0 {
			return v[i+1:]
		}
	}
	return ""
}
