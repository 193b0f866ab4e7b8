package apply

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Drift is what someone changed on the cluster in the fields a strategy keeps, found in the live object
// the strategy read and put back: the manifest had not changed since it was last applied, yet the object
// no longer held it. Only Update and ServerSideApply report drift; the other strategies leave changes
// made on the cluster alone by design.
type Drift struct {
	// Fields are the paths that differ from the manifest (".spec.replicas",
	// ".spec.template.spec.containers[0].image", ".metadata.labels[app.kubernetes.io/name]"), sorted, at
	// most MaxDriftFields of them.
	Fields []string
	// MoreFields counts the differing paths left out of Fields.
	MoreFields int
	// Managers are the field managers of the live object, other than the strategy's own, that own one
	// of those fields (what kubectl, a controller or a person's tool calls itself: "kubectl-edit",
	// "kubectl-client-side-apply", "hpa-controller"), the most recent writer first. Empty when the live
	// object's managedFields do not say (a manager that wrote the fields before the last apply, or an
	// object without managedFields).
	Managers []string
	// Time is when the first of Managers last wrote the object, from managedFields; nil when unknown.
	Time *metav1.Time
}

// MaxDriftFields bounds Drift.Fields: a report names a few fields, not a whole object someone replaced.
const MaxDriftFields = 5

// computeDrift compares the live object with want, what it must hold (the manifest as the strategy
// writes it, with the owner reference), and says what differs and who changed it; nil when nothing
// differs. fieldManager is the strategy's own manager, never named as the one who changed a field.
func computeDrift(live, want *unstructured.Unstructured, fieldManager string) *Drift {
	var paths []string
	for _, ref := range want.GetOwnerReferences() {
		if !hasOwner(live, &ref) {
			paths = append(paths, ".metadata.ownerReferences")
			break
		}
	}
	rest := want.DeepCopy()
	unstructured.RemoveNestedField(rest.Object, "metadata", "ownerReferences")
	differences(live.Object, rest.Object, "", func(path string, _, _ any) { paths = append(paths, path) })
	if len(paths) == 0 {
		return nil
	}
	sort.Strings(paths)
	d := &Drift{}
	if len(paths) > MaxDriftFields {
		d.Fields, d.MoreFields = paths[:MaxDriftFields], len(paths)-MaxDriftFields
	} else {
		d.Fields = paths
	}
	d.Managers, d.Time = managersOf(live.GetManagedFields(), paths, fieldManager)
	return d
}

// differences calls found with each path under path where have does not hold want, and the values
// there (nil for a field have does not have), compared as contains compares them: maps by key (a key
// want sets to null may be missing), lists element by element (a list of another length differs as a
// whole), scalars by value.
func differences(have, want any, path string, found func(path string, have, want any)) {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			found(rootPath(path), have, want)
			return
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok {
				if wv != nil {
					found(fieldPath(path, k), nil, wv)
				}
				continue
			}
			differences(hv, wv, fieldPath(path, k), found)
		}
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			found(rootPath(path), have, want)
			return
		}
		for i := range w {
			differences(h[i], w[i], fmt.Sprintf("%s[%d]", path, i), found)
		}
	default:
		if !contains(have, want) {
			found(rootPath(path), have, want)
		}
	}
}

func rootPath(path string) string {
	if path == "" {
		return "."
	}
	return path
}

// identifier is a field name that a path can show after a dot.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// fieldPath is path's field name: ".name", or "[name]" for a key that is not an identifier (a label
// such as app.kubernetes.io/name), as Ferry's field paths write them.
func fieldPath(path, name string) string {
	if identifier.MatchString(name) {
		return path + "." + name
	}
	return path + "[" + name + "]"
}

// managersOf names the managers, other than own, whose managedFields entry owns one of paths, the
// latest writer first, and the time of the latest write. A list element is matched by position only
// loosely: managedFields name elements by key or value, paths by index, so any element of the list
// matches.
func managersOf(entries []metav1.ManagedFieldsEntry, paths []string, own string) ([]string, *metav1.Time) {
	type owner struct {
		name string
		time *metav1.Time
	}
	var owners []owner
	seen := map[string]int{}
	for _, e := range entries {
		if e.Manager == own || e.FieldsV1 == nil {
			continue
		}
		owned := ownedPaths(e.FieldsV1.Raw)
		if !ownsAny(owned, paths) {
			continue
		}
		if i, ok := seen[e.Manager]; ok {
			// One manager may have an Apply and an Update entry: keep the later time.
			if e.Time != nil && (owners[i].time == nil || owners[i].time.Before(e.Time)) {
				owners[i].time = e.Time
			}
			continue
		}
		seen[e.Manager] = len(owners)
		owners = append(owners, owner{name: e.Manager, time: e.Time})
	}
	sort.SliceStable(owners, func(i, j int) bool {
		ti, tj := owners[i].time, owners[j].time
		if ti == nil || tj == nil {
			return ti != nil
		}
		return tj.Before(ti)
	})
	var names []string
	for _, o := range owners {
		names = append(names, o.name)
	}
	if len(owners) == 0 {
		return nil, nil
	}
	return names, owners[0].time
}

// anyIndex matches a list index in a path, which managedFields do not know.
var anyIndex = regexp.MustCompile(`\[[0-9]+\]`)

// ownsAny reports whether one of owned (paths a manager owns, list elements as "[]") is one of paths, a
// field under one of them, or holds one of them whole.
func ownsAny(owned map[string]bool, paths []string) bool {
	for _, p := range paths {
		p = anyIndex.ReplaceAllString(p, "[]")
		for o := range owned {
			if o == p || strings.HasPrefix(o, p+".") || strings.HasPrefix(o, p+"[") ||
				strings.HasPrefix(p, o+".") || strings.HasPrefix(p, o+"[") {
				return true
			}
		}
	}
	return false
}

// ownedPaths reads a managedFields entry's fieldsV1 ({"f:spec":{"f:replicas":{}}, "k:{...}": {...},
// ".": {}}) into the paths it owns: its leaves and the nodes marked owned themselves ("."), with every
// list element, whatever its key, written "[]". An entry that does not parse owns nothing.
func ownedPaths(raw []byte) map[string]bool {
	var tree map[string]any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil
	}
	out := map[string]bool{}
	var walk func(node map[string]any, path string)
	walk = func(node map[string]any, path string) {
		if len(node) == 0 && path != "" {
			out[path] = true
			return
		}
		for k, v := range node {
			if k == "." {
				out[path] = true
				continue
			}
			child, _ := v.(map[string]any)
			switch {
			case strings.HasPrefix(k, "f:"):
				walk(child, fieldPath(path, strings.TrimPrefix(k, "f:")))
			case strings.HasPrefix(k, "k:"), strings.HasPrefix(k, "v:"), strings.HasPrefix(k, "i:"):
				walk(child, path+"[]")
			}
		}
	}
	walk(tree, "")
	return out
}
