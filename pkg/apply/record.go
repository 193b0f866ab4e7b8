package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-mc/ferry/pkg/workload"
)

// The last-applied record is the manifest as Ferry last applied it (normalized, without Ferry's owner
// reference), the "original" of the 3-way merge. It lives in an annotation on the object, like
// kubectl's, unless it is too large for one: the API server caps all annotations of an object at
// 256 KiB together, so a record over maxInlineRecord goes to the RecordStore and the annotation keeps
// a reference to it instead.
const (
	// LastAppliedAnnotation holds the record inline.
	LastAppliedAnnotation = "ferry.io/last-applied"
	// LastAppliedRefAnnotation holds "<store key>/<hash of the record>" when the record is kept in
	// the RecordStore.
	LastAppliedRefAnnotation = "ferry.io/last-applied-ref"

	maxInlineRecord = 128 << 10
)

// RecordStore keeps last-applied records too large for an annotation.
type RecordStore interface {
	// Get returns the record under key, or ok=false when there is none.
	Get(ctx context.Context, key string) (data []byte, ok bool, err error)
	// Put stores data under key.
	Put(ctx context.Context, key string, data []byte) error
	// Delete removes the record under key; a missing one is not an error.
	Delete(ctx context.Context, key string) error
}

// record is a last-applied record ready to be written.
type record struct {
	data []byte // the manifest's JSON
	hash string // Hash of the manifest, = sha of data
	// annotations to set on the object, and the one to remove
	set    map[string]string
	remove string
}

func newRecord(desired *unstructured.Unstructured, storeKey string, store RecordStore) (*record, error) {
	data, err := json.Marshal(desired.Object)
	if err != nil {
		return nil, fmt.Errorf("encode last-applied record: %w", err)
	}
	r := &record{data: data, hash: workload.HashBytes(data)}
	if len(data) > maxInlineRecord && store == nil {
		return nil, &InvalidManifestError{Reason: fmt.Sprintf(
			"the manifest is %d bytes, too large for a last-applied annotation (at most %d), and no record store is configured; use the ServerSideApply or CreateOnly strategy for it",
			len(data), maxInlineRecord)}
	}
	if len(data) <= maxInlineRecord {
		r.set = map[string]string{LastAppliedAnnotation: string(data)}
		r.remove = LastAppliedRefAnnotation
	} else {
		r.set = map[string]string{LastAppliedRefAnnotation: storeKey + "/" + r.hash}
		r.remove = LastAppliedAnnotation
	}
	return r, nil
}

func (r *record) inline() bool { _, ok := r.set[LastAppliedAnnotation]; return ok }

// annotate returns a copy of desired carrying the record's annotations.
func (r *record) annotate(desired *unstructured.Unstructured) *unstructured.Unstructured {
	out := desired.DeepCopy()
	ann := out.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	for k, v := range r.set {
		ann[k] = v
	}
	out.SetAnnotations(ann)
	return out
}

// lastApplied returns current's last-applied record, or nil when it has none.
func lastApplied(ctx context.Context, store RecordStore, current *unstructured.Unstructured) ([]byte, error) {
	ann := current.GetAnnotations()
	if v, ok := ann[LastAppliedAnnotation]; ok {
		return []byte(v), nil
	}
	ref, ok := ann[LastAppliedRefAnnotation]
	if !ok || store == nil {
		return nil, nil
	}
	i := strings.LastIndexByte(ref, '/')
	if i < 0 {
		return nil, nil
	}
	data, ok, err := store.Get(ctx, ref[:i])
	if err != nil {
		return nil, fmt.Errorf("read last-applied record %s: %w", ref[:i], err)
	}
	if !ok || workload.HashBytes(data) != ref[i+1:] {
		return nil, nil // lost or stale: merge as if nothing had been applied
	}
	return data, nil
}
