package hub

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// An AppConfig's status is written as a JSON patch (RFC 6902) of what changed since the status it was
// computed from, guarded by a test of that status' resourceVersion, so that the patch applies to exactly
// that status or not at all. A JSON merge patch cannot change one element of a list: when one cluster of
// the 20 the status lists healed, and the next one took its place, it sent all 20 clusters again, in
// detail — in the heal phase of a fleet's reports nearly every patch, 20 times the bytes of a degrade
// phase that only moved counts, and the API server's time with them.

// computeStatusPatch is the JSON patch that takes the status of an AppConfig from was, stored at
// resourceVersion, to status, and tests that resourceVersion first; nil when nothing changed. A list is
// changed element by element (removed, added and changed elements, in the order that keeps the rest; an
// added element as a copy of its neighbour where that is shorter), unless that is longer than writing
// it whole.
func computeStatusPatch(resourceVersion string, was, status []byte) ([]byte, error) {
	var before, after any
	if err := json.Unmarshal(was, &before); err != nil {
		return nil, fmt.Errorf("read the status written: %w", err)
	}
	if err := json.Unmarshal(status, &after); err != nil {
		return nil, fmt.Errorf("read the status to write: %w", err)
	}
	if m, ok := before.(map[string]any); ok && len(m) == 0 {
		// Nothing written yet: the object may have no status to add fields to.
		return wholeStatusPatch(status)
	}
	var ops []jsonPatchOp
	if err := diffJSON(before, after, "/status", &ops); err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, nil
	}
	rv, err := json.Marshal(resourceVersion)
	if err != nil {
		return nil, err
	}
	return json.Marshal(append([]jsonPatchOp{{Op: "test", Path: "/metadata/resourceVersion", Value: json.RawMessage(rv)}}, ops...))
}

// wholeStatusPatch is the JSON patch that writes status whole, whatever the status stored (none
// included: "add" of a member there is replaces it).
func wholeStatusPatch(status []byte) ([]byte, error) {
	return json.Marshal([]jsonPatchOp{{Op: "add", Path: "/status", Value: json.RawMessage(status)}})
}

// diffJSON appends to ops what takes a to b at path: objects key by key, lists element by element
// (diffList), anything else replaced.
func diffJSON(a, b any, path string, ops *[]jsonPatchOp) error {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return appendOp(ops, "replace", path, b)
		}
		for _, k := range slices.Sorted(maps.Keys(av)) {
			if _, ok := bv[k]; !ok {
				*ops = append(*ops, jsonPatchOp{Op: "remove", Path: path + "/" + escapeJSONPointer(k)})
			}
		}
		for _, k := range slices.Sorted(maps.Keys(bv)) {
			p := path + "/" + escapeJSONPointer(k)
			if x, ok := av[k]; ok {
				if err := diffJSON(x, bv[k], p, ops); err != nil {
					return err
				}
			} else if err := appendOp(ops, "add", p, bv[k]); err != nil {
				return err
			}
		}
		return nil
	case []any:
		bv, ok := b.([]any)
		if !ok {
			return appendOp(ops, "replace", path, b)
		}
		return diffList(av, bv, path, ops)
	}
	if !jsonEqual(a, b) {
		return appendOp(ops, "replace", path, b)
	}
	return nil
}

// diffList appends to ops what takes list a to list b: the elements of a that b no longer holds
// removed (the last first, so that the indices hold), then those of b that a does not hold added at
// their places (addElement), keeping the longest run of elements both hold in the same order untouched.
// When that writes more than the list whole, the list is replaced.
func diffList(a, b []any, path string, ops *[]jsonPatchOp) error {
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	as, bs := encodeAll(a), encodeAll(b)
	keepA, keepB := commonRun(as, bs)
	var listOps []jsonPatchOp
	for i := len(a) - 1; i >= 0; i-- {
		if !keepA[i] {
			listOps = append(listOps, jsonPatchOp{Op: "remove", Path: path + "/" + strconv.Itoa(i)})
		}
	}
	for j := range b {
		if keepB[j] {
			continue
		}
		// Once the removes and the adds before it are applied, the list holds b[0..j) at 0..j-1 and,
		// from j on, the elements of b kept from a: the first of those is at j.
		var neighbours []listNeighbour
		if j > 0 {
			neighbours = append(neighbours, listNeighbour{at: j - 1, in: j - 1})
		}
		if k := slices.Index(keepB[j:], true); k >= 0 {
			neighbours = append(neighbours, listNeighbour{at: j, in: j + k})
		}
		var err error
		if listOps, err = addElement(listOps, path, j, b, bs[j], neighbours); err != nil {
			return err
		}
	}
	whole, err := json.Marshal(b)
	if err != nil {
		return err
	}
	if edits, _ := json.Marshal(listOps); len(edits) >= len(whole) {
		*ops = append(*ops, jsonPatchOp{Op: "replace", Path: path, Value: json.RawMessage(whole)})
		return nil
	}
	*ops = append(*ops, listOps...)
	return nil
}

// listNeighbour is an element of b that a list holds while b is being patched into it: at its index
// there then, in its index in b.
type listNeighbour struct{ at, in int }

// addElement appends to ops what inserts b[j] (encoded) at index j of the list at path: the element
// whole, or — when that is shorter — a copy of a neighbour the list holds then, changed where it
// differs. The clusters a status lists mostly differ in their names alone (the same Deployment degraded
// on 20 clusters): a copy and a new name are a third of the bytes of the cluster in full.
func addElement(ops []jsonPatchOp, path string, j int, b []any, encoded string, neighbours []listNeighbour) ([]jsonPatchOp, error) {
	at := path + "/" + strconv.Itoa(j)
	best := []jsonPatchOp{{Op: "add", Path: at, Value: json.RawMessage(encoded)}}
	bestSize := len(encoded) + len(at) + 30 // {"op":"add","path":"","value":}
	for _, n := range neighbours {
		edits := []jsonPatchOp{{Op: "copy", From: path + "/" + strconv.Itoa(n.at), Path: at}}
		if err := diffJSON(b[n.in], b[j], at, &edits); err != nil {
			return nil, err
		}
		raw, err := json.Marshal(edits)
		if err != nil {
			return nil, err
		}
		if len(raw) < bestSize {
			best, bestSize = edits, len(raw)
		}
	}
	return append(ops, best...), nil
}

// commonRun marks the elements of the longest common subsequence of a and b (compared as JSON).
// Lists in a status are short (at most tens of elements): quadratic is fine.
func commonRun(a, b []string) (keepA, keepB []bool) {
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	keepA, keepB = make([]bool, n), make([]bool, m)
	for i, j := 0, 0; i < n && j < m; {
		switch {
		case a[i] == b[j]:
			keepA[i], keepB[j] = true, true
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			i++
		default:
			j++
		}
	}
	return keepA, keepB
}

func encodeAll(xs []any) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		raw, _ := json.Marshal(x) // decoded from JSON: it encodes
		out[i] = string(raw)
	}
	return out
}

func jsonEqual(a, b any) bool {
	ra, _ := json.Marshal(a)
	rb, _ := json.Marshal(b)
	return string(ra) == string(rb)
}

func appendOp(ops *[]jsonPatchOp, op, path string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	*ops = append(*ops, jsonPatchOp{Op: op, Path: path, Value: json.RawMessage(raw)})
	return nil
}

// writtenStatuses remembers the status this hub last wrote of each AppConfig, with the resourceVersion
// the API server gave it, until the cache shows that version or a later one. The next status is built on
// and computed from the newer of the two: a cache behind the hub's own writes (seconds behind on an API
// server busy with a fleet's reports) would otherwise have it patch from a status that is no longer
// stored — its test fails, and the status is written whole.
type writtenStatuses struct {
	mu    sync.Mutex
	byApp map[types.NamespacedName]writtenStatus
}

// writtenStatus is an AppConfig's status as stored at resourceVersion, decoded and as JSON. Neither is
// changed once recorded.
type writtenStatus struct {
	resourceVersion string
	status          *v1alpha2.ApplicationConfigurationStatus
	json            []byte
}

// base is what the next status of app is built on: cached, its status as the cache shows it, or the one
// this hub wrote since, if the cache does not show that write yet.
func (w *writtenStatuses) base(app types.NamespacedName, cached writtenStatus) writtenStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	written, ok := w.byApp[app]
	if !ok {
		return cached
	}
	if c, err := resourceversion.CompareResourceVersion(cached.resourceVersion, written.resourceVersion); err != nil || c >= 0 {
		// The cache caught up (or versions do not compare): it holds what is stored, or later.
		delete(w.byApp, app)
		return cached
	}
	return written
}

// record remembers that app's status was written as written.
func (w *writtenStatuses) record(app types.NamespacedName, written writtenStatus) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byApp == nil {
		w.byApp = map[types.NamespacedName]writtenStatus{}
	}
	w.byApp[app] = written
}

// forget drops what was remembered of app (deleted, or its status could not be written).
func (w *writtenStatuses) forget(app types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.byApp, app)
}

// statusJSON is status as the API server stores it.
func statusJSON(status *v1alpha2.ApplicationConfigurationStatus) ([]byte, error) {
	raw, err := json.Marshal(status)
	if err != nil {
		return nil, fmt.Errorf("encode the status: %w", err)
	}
	return raw, nil
}

// Metrics of the AppConfig status writes: how many, whole or as changes, and their bytes.
var (
	statusPatches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ferry_hub_appconfig_status_patches_total",
		Help: "AppConfig status writes of the hub, by how: changes (a JSON patch of what changed) or whole " +
			"(the status the changes were computed from was no longer the one stored).",
	}, []string{"how"})
	statusPatchBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ferry_hub_appconfig_status_patch_bytes_total",
		Help: "Bytes of the hub's AppConfig status writes (their patches).",
	})
)

func init() {
	ctrlmetrics.Registry.MustRegister(statusPatches, statusPatchBytes)
}
