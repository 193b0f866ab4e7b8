package apply

import (
	"encoding/base64"
	"encoding/json"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-mc/ferry/pkg/workreport"
)

// computeDiff says what applying desired (a normalized manifest) under the Update strategy would change
// on live, the object as read (nil: there is none), for a report-only delivery; it reads and writes
// nothing.
//
// What is compared:
//   - every field the manifest sets, as Update's drift check compares them (differences): a field
//     differs when the live object does not hold the manifest's value; fields only the live object has
//     (defaults, status, what others set) are not differences. Lists are compared element by element,
//     and a list of another length differs as a whole.
//   - the fields Ferry's inline last-applied record on live (LastAppliedAnnotation) holds and the
//     manifest no longer sets: Update's 3-way merge removes them, so they are shown with the wanted
//     value null. Only maps are followed; a list the manifest still sets is compared as a whole above,
//     not element by element against the record. A record kept in a RecordStore is not read (that
//     would be a request of its own), nor is kubectl's.
//
// Not compared: ownerReferences (a report-only delivery owns nothing), Ferry's record annotation itself,
// and what the API server would default or normalize on write (a field the manifest writes as "1000m"
// and the server stores as "1" shows as a difference, as it does in drift reports).
//
// A Secret's stringData is compared as the data the API server stores it as, and no value under .data
// or .stringData is ever shown: such a value is workreport.HiddenValue (a missing one is still null).
func computeDiff(live, desired *unstructured.Unstructured) *workreport.Diff {
	if live == nil {
		return &workreport.Diff{Create: true}
	}
	secret := isSecret(desired)
	want := comparableManifest(desired.Object, secret)
	var changes []workreport.FieldChange
	found := func(path string, have, want any) {
		changes = append(changes, fieldChange(path, have, want, secret))
	}
	differences(live.Object, want, "", found)
	if rec, ok := live.GetAnnotations()[LastAppliedAnnotation]; ok {
		var applied map[string]any
		if json.Unmarshal([]byte(rec), &applied) == nil {
			removals(comparableManifest(applied, secret), want, live.Object, "", found)
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	d := &workreport.Diff{Fields: changes}
	if len(changes) > workreport.MaxDiffFields {
		d.Fields, d.MoreFields = changes[:workreport.MaxDiffFields], len(changes)-workreport.MaxDiffFields
	}
	return d
}

// comparableManifest is a copy of a manifest as computeDiff compares it: without ownerReferences and,
// for a Secret, with its stringData written into data, base64-encoded, as the API server stores it.
func comparableManifest(manifest map[string]any, secret bool) map[string]any {
	out := (&unstructured.Unstructured{Object: manifest}).DeepCopy().Object
	unstructured.RemoveNestedField(out, "metadata", "ownerReferences")
	if !secret {
		return out
	}
	stringData, ok := out["stringData"].(map[string]any)
	if !ok {
		return out
	}
	data, _ := out["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range stringData {
		s, ok := v.(string)
		if !ok {
			return out // not a Secret the API server would take: compared as written
		}
		data[k] = base64.StdEncoding.EncodeToString([]byte(s))
	}
	out["data"] = data
	delete(out, "stringData")
	return out
}

// removals calls found with each path under path that applied (the last-applied record) sets, want (the
// manifest) does not and live holds, with live's value there: what Update's 3-way merge would remove.
func removals(applied, want, live map[string]any, path string, found func(path string, have, want any)) {
	for k, av := range applied {
		lv, inLive := live[k]
		if !inLive || lv == nil {
			continue // nothing to remove
		}
		wv, inWant := want[k]
		if !inWant {
			found(fieldPath(path, k), lv, nil)
			continue
		}
		am, ok1 := av.(map[string]any)
		wm, ok2 := wv.(map[string]any)
		lm, ok3 := lv.(map[string]any)
		if ok1 && ok2 && ok3 {
			removals(am, wm, lm, fieldPath(path, k), found)
		}
	}
}

// fieldChange is the change at path from have to want, their values as a diff shows them: a Secret's
// data hidden.
func fieldChange(path string, have, want any, secret bool) workreport.FieldChange {
	f := workreport.FieldChange{Path: path, Live: workreport.DiffValue(have), Want: workreport.DiffValue(want)}
	if secret && secretValuePath(path) {
		if have != nil {
			f.Live = workreport.HiddenValue
		}
		if want != nil {
			f.Want = workreport.HiddenValue
		}
	}
	return f
}

func isSecret(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == "" && gvk.Kind == "Secret"
}

// secretValuePath reports whether path is a Secret's data, or a value in it.
func secretValuePath(path string) bool {
	for _, field := range []string{".data", ".stringData"} {
		if path == field || strings.HasPrefix(path, field+".") || strings.HasPrefix(path, field+"[") {
			return true
		}
	}
	return false
}
