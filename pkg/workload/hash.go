package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Hash identifies a manifest's content: equal manifests hash equal whatever the order of their keys.
func Hash(u *unstructured.Unstructured) string {
	// encoding/json writes map keys sorted, so the encoding is canonical.
	data, err := json.Marshal(u.Object)
	if err != nil {
		// An unstructured object decoded from JSON or YAML always encodes.
		panic(fmt.Sprintf("encode %s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err))
	}
	return HashBytes(data)
}

// HashBytes is the hash Hash gives an encoded manifest: a last-applied record is compared by it with
// the manifest it records.
func HashBytes(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:12])
}
