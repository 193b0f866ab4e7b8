package apply

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/itchyny/gojq"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"
)

// IgnoreCondition says when ServerSideApply leaves the fields of an IgnoreField alone.
//
// Both conditions do what the OCM work agent does with the same manifest, with two differences. Where OCM
// drops an ignored field from the apply while its field manager is still the field's only owner, the API
// server deletes the field (a Deployment's replicas fall back to 1); Ferry instead sends such a field at
// its current value on the cluster, which keeps it, and its ownership, as they are. And where OCM sends
// nothing at all while the manifest is unchanged, Ferry still puts back fields that are not ignored.
type IgnoreCondition string

const (
	// OnSpokePresent: the manifest's values for the fields are applied when the object is created, and
	// never again. Once the object exists, a field another actor has taken over (its write moved the
	// field's ownership away from Ferry's field manager) is left out of the apply, and a field Ferry still
	// owns is sent at its current value, so that a later manifest changes neither. This is also the
	// default for an empty condition, as in the ManifestWork API.
	OnSpokePresent IgnoreCondition = "OnSpokePresent"
	// OnSpokeChange: the fields are applied like any other whenever the manifest changes, that is when the
	// object does not yet carry this manifest's hash, overwriting (with force) or conflicting with (without)
	// a value another actor set, as OCM does. While the manifest stays the same, a field another actor has
	// changed since, which took its ownership from Ferry's field manager, is left out of the apply, so the
	// change is kept.
	OnSpokeChange IgnoreCondition = "OnSpokeChange"
)

// IgnoreField names fields, by Kubernetes JSONPath, JSON Pointer (RFC 6901) or jq path expression, that
// ServerSideApply leaves alone under Condition. The selectors are evaluated against the manifest, so only
// fields the manifest sets can be ignored; a selector that matches nothing is not an error. A change made
// on the cluster to an ignored field never causes a write.
type IgnoreField struct {
	Condition         IgnoreCondition
	JSONPaths         []string
	JSONPointers      []string
	JQPathExpressions []string
}

// IgnoreFieldError is an IgnoreField that cannot be used: an expression that does not parse, a jq
// expression that fails, or an unknown condition. The ManifestWork API reports it with the reason
// AppliedManifestSSAIgnoreFieldError.
type IgnoreFieldError struct {
	Kind       string // "JSONPath", "JSON Pointer", "jq path expression" or "condition"
	Expression string
	Err        error
}

func (e *IgnoreFieldError) Error() string {
	return fmt.Sprintf("ignoreFields: %s %q: %v", e.Kind, e.Expression, e.Err)
}

func (e *IgnoreFieldError) Unwrap() error { return e.Err }

// IsIgnoreFieldError reports whether err is an IgnoreFieldError.
func IsIgnoreFieldError(err error) bool {
	var e *IgnoreFieldError
	return errors.As(err, &e)
}

// jqTimeout bounds one jq expression: it runs in the agent on every apply, and jq can loop forever.
const jqTimeout = time.Second

// ignoreFields returns the configuration ServerSideApply sends (a copy of the manifest, adapted to
// r.opts.IgnoreFields) and the configuration the object must already hold for nothing to be sent (the
// manifest without any ignored field, so that changes made on the cluster to them never cause a write).
func ignoreFields(ctx context.Context, r *request) (cfg, want *unstructured.Unstructured, err error) {
	cfg = r.desired.DeepCopy()
	if len(r.opts.IgnoreFields) == 0 {
		return cfg, cfg, nil
	}
	fields, err := selectIgnored(ctx, r.desired.Object, r.opts.IgnoreFields)
	if err != nil {
		return nil, nil, err
	}
	want = r.desired.DeepCopy()
	all := make([][]any, 0, len(fields))
	for _, f := range fields {
		all = append(all, f.path)
	}
	removeAll(want.Object, all)
	if r.current == nil {
		return cfg, want, nil // a new object gets every field the manifest sets
	}

	set := appliedFields(r.current, r.opts.FieldManager)
	newManifest := r.current.GetAnnotations()[AppliedHashAnnotation] != r.result.Hash
	var drop [][]any
	for _, f := range fields {
		if f.cond == OnSpokeChange && newManifest {
			continue
		}
		if v, ok := owned(set, r.desired.Object, r.current.Object, f.path); ok {
			cfg.Object = setAt(cfg.Object, f.path, runtime.DeepCopyJSONValue(v)).(map[string]any)
		} else {
			drop = append(drop, f.path)
		}
	}
	removeAll(cfg.Object, drop)
	// An apply must name its object, whatever the selectors matched.
	cfg.SetAPIVersion(r.desired.GetAPIVersion())
	cfg.SetKind(r.desired.GetKind())
	cfg.SetName(r.desired.GetName())
	cfg.SetNamespace(r.desired.GetNamespace())
	return cfg, want, nil
}

// ignoredField is one field an IgnoreField selects in the manifest: its path from the root, map keys as
// strings and list indices as ints.
type ignoredField struct {
	path []any
	cond IgnoreCondition
}

// selectIgnored evaluates every selector of fields against the manifest obj, compiling each once.
func selectIgnored(ctx context.Context, obj map[string]any, fields []IgnoreField) ([]ignoredField, error) {
	var out []ignoredField
	var jqInput any // gojq rewrites the numbers of its input in place, so it gets a copy
	for _, f := range fields {
		cond := f.Condition
		switch cond {
		case "":
			cond = OnSpokePresent
		case OnSpokePresent, OnSpokeChange:
		default:
			return nil, &IgnoreFieldError{Kind: "condition", Expression: string(cond),
				Err: fmt.Errorf("want %s or %s", OnSpokePresent, OnSpokeChange)}
		}
		add := func(kind, expr string, paths [][]any, err error) error {
			if ctx.Err() != nil {
				return ctx.Err() // the apply was cancelled: not the expression's fault
			}
			for _, p := range paths {
				if len(p) == 0 && err == nil {
					err = errors.New("it selects the whole object")
				}
			}
			if err != nil {
				return &IgnoreFieldError{Kind: kind, Expression: expr, Err: err}
			}
			for _, p := range paths {
				if p, ok := resolve(obj, p); ok {
					out = append(out, ignoredField{path: p, cond: cond})
				}
			}
			return nil
		}
		for _, e := range f.JSONPaths {
			paths, err := jsonPathSelect(obj, e)
			if err := add("JSONPath", e, paths, err); err != nil {
				return nil, err
			}
		}
		for _, e := range f.JSONPointers {
			path, err := pointerSelect(e)
			if err := add("JSON Pointer", e, [][]any{path}, err); err != nil {
				return nil, err
			}
		}
		for _, e := range f.JQPathExpressions {
			if jqInput == nil {
				jqInput = runtime.DeepCopyJSONValue(obj)
			}
			paths, err := jqSelect(ctx, jqInput, e)
			if err := add("jq path expression", e, paths, err); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// quotedKey is a bracketed key, ['a.b/c'] or ["a.b/c"]: it names one key, dots and all (the jsonpath
// package would read ['a.b'] as .a.b and reject the double quotes OCM's examples use).
var quotedKey = regexp.MustCompile(`\[\s*(?:'([^']*)'|"([^"]*)")\s*\]`)

// jsonPathSelect returns the paths a Kubernetes JSONPath selects in obj. The library finds values, not
// where they are, so the path is split before its last step: the containers the first part finds are
// located in obj by identity, and the last step picks among their keys or indices.
func jsonPathSelect(obj map[string]any, expr string) ([][]any, error) {
	text := strings.TrimSpace(expr)
	if !strings.HasPrefix(text, "{") {
		text = "{" + text + "}"
	}
	text = quotedKey.ReplaceAllStringFunc(text, func(m string) string {
		sub := quotedKey.FindStringSubmatch(m)
		var b strings.Builder
		b.WriteByte('.')
		for _, r := range sub[1] + sub[2] {
			if strings.ContainsRune(".,[]$@{} \t", r) {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		return b.String()
	})
	nodes, err := jsonPathNodes(text)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return [][]any{{}}, nil
	}
	inner := text[1 : len(text)-1]
	prefix, last, found := "", inner, len(nodes) == 1
	for i := len(inner) - 1; i > 0 && !found; i-- {
		if inner[i] != '.' && inner[i] != '[' {
			continue
		}
		p, err1 := jsonPathNodes("{" + inner[:i] + "}")
		l, err2 := jsonPathNodes("{" + inner[i:] + "}")
		found = err1 == nil && err2 == nil && sameSteps(append(p, l...), nodes) && len(l) == 1
		prefix, last = inner[:i], inner[i:]
	}
	if !found {
		return nil, errors.New("cannot tell which field its last step selects: end it with .field, [index], [*] or [?(filter)] (.. is not supported)")
	}
	_, filter := nodes[len(nodes)-1].(*jsonpath.FilterNode)

	// Evaluation errors (an index out of range, a field that is not a list) select nothing.
	parents := []any{obj}
	if prefix != "" {
		parents = nil
		for _, r := range findJSONPath(prefix, obj) {
			parents = append(parents, r.Interface())
		}
	}
	index := containerPaths(obj)
	var out [][]any
	for _, parent := range parents {
		at, ok := index[identity(parent)]
		if !ok {
			continue // a scalar: it has no fields
		}
		// Run the last step over the parent's keys (or indices) to learn which it picks; a filter needs
		// the elements themselves, matched back by identity.
		var subject any
		switch p := parent.(type) {
		case map[string]any:
			keys := make(map[string]any, len(p))
			for k := range p {
				keys[k] = k
			}
			subject = keys
		case []any:
			subject = p
			if !filter {
				indices := make([]any, len(p))
				for i := range indices {
					indices[i] = i
				}
				subject = indices
			}
		}
		for _, v := range findJSONPath(last, subject) {
			if !filter {
				out = append(out, append(slices.Clip(at), v.Interface()))
				continue
			}
			for i, e := range parent.([]any) {
				if sameValue(e, v.Interface()) {
					out = append(out, append(slices.Clip(at), i))
				}
			}
		}
	}
	return out, nil
}

// jsonPathNodes parses one {…} JSONPath and returns its steps.
func jsonPathNodes(text string) ([]jsonpath.Node, error) {
	p, err := jsonpath.Parse("ignoreFields", text)
	if err != nil {
		return nil, err
	}
	if len(p.Root.Nodes) != 1 {
		return nil, errors.New("want exactly one path")
	}
	list, ok := p.Root.Nodes[0].(*jsonpath.ListNode)
	if !ok {
		return nil, errors.New("want a path, not text")
	}
	return list.Nodes, nil
}

func sameSteps(a, b []jsonpath.Node) bool {
	return slices.EqualFunc(a, b, func(x, y jsonpath.Node) bool { return x.String() == y.String() })
}

// findJSONPath returns what path finds in data; a path that fails to evaluate finds nothing.
func findJSONPath(path string, data any) []reflect.Value {
	j := jsonpath.New("ignoreFields").AllowMissingKeys(true)
	if j.Parse("{"+path+"}") != nil {
		return nil
	}
	results, err := j.FindResults(data)
	if err != nil {
		return nil
	}
	return slices.Concat(results...)
}

// containerPaths maps the identity of every map and non-empty list in obj to its path.
func containerPaths(obj any) map[uintptr][]any {
	index := map[uintptr][]any{}
	var walk func(v any, path []any)
	walk = func(v any, path []any) {
		switch n := v.(type) {
		case map[string]any:
			index[identity(n)] = path
			for k, c := range n {
				walk(c, append(slices.Clip(path), k))
			}
		case []any:
			if len(n) > 0 {
				index[identity(n)] = path
			}
			for i, c := range n {
				walk(c, append(slices.Clip(path), i))
			}
		}
	}
	walk(obj, []any{})
	return index
}

// identity is the address of a map or a list's first element, or 0 for anything else.
func identity(v any) uintptr {
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Map, reflect.Slice:
		return rv.Pointer()
	}
	return 0
}

func sameValue(a, b any) bool {
	if ia := identity(a); ia != 0 {
		return ia == identity(b)
	}
	return a == b
}

// pointerSelect parses an RFC 6901 JSON Pointer into a path; its tokens are resolved against the
// manifest later, where a token in a list is an index.
func pointerSelect(ptr string) ([]any, error) {
	if ptr == "" {
		return []any{}, nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, errors.New(`a JSON Pointer starts with "/"`)
	}
	tokens := strings.Split(ptr[1:], "/")
	path := make([]any, len(tokens))
	for i, t := range tokens {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 == len(t) || (t[j+1] != '0' && t[j+1] != '1')) {
				return nil, fmt.Errorf(`token %q: "~" must be followed by 0 or 1`, t)
			}
		}
		path[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return path, nil
}

// jqSelect returns the paths a jq path expression selects in input (a copy of the manifest).
func jqSelect(ctx context.Context, input any, expr string) ([][]any, error) {
	q, err := gojq.Parse(expr)
	if err != nil {
		return nil, err
	}
	code, err := gojq.Compile(&gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeFunc,
		Func: &gojq.Func{Name: "path", Args: []*gojq.Query{q}}}})
	if err != nil {
		return nil, err
	}
	run, cancel := context.WithTimeout(ctx, jqTimeout)
	defer cancel()
	var out [][]any
	iter := code.RunWithContext(run, input)
	for {
		v, ok := iter.Next()
		if !ok {
			return out, nil
		}
		if err, ok := v.(error); ok {
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				return nil, fmt.Errorf("evaluation took longer than %s", jqTimeout)
			}
			return nil, err
		}
		steps, _ := v.([]any)
		path := make([]any, len(steps))
		for i, s := range steps {
			switch s := s.(type) {
			case string, int:
				path[i] = s
			case float64:
				if s != float64(int(s)) {
					return nil, fmt.Errorf("path step %v is not an index", s)
				}
				path[i] = int(s)
			default:
				return nil, fmt.Errorf("path step %v is neither a key nor an index (slices are not supported)", s)
			}
		}
		out = append(out, path)
	}
}

// resolve checks that path exists in obj and returns it with list indices as non-negative ints (JSON
// Pointer tokens are strings, jq counts negative indices from the end).
func resolve(obj any, path []any) ([]any, bool) {
	out := make([]any, len(path))
	node := obj
	for i, step := range path {
		switch n := node.(type) {
		case map[string]any:
			k, ok := step.(string)
			if !ok {
				return nil, false
			}
			if node, ok = n[k]; !ok {
				return nil, false
			}
			out[i] = k
		case []any:
			idx, ok := step.(int)
			if token, isToken := step.(string); isToken {
				idx, ok = arrayIndex(token)
			}
			if idx < 0 {
				idx += len(n)
			}
			if !ok || idx < 0 || idx >= len(n) {
				return nil, false
			}
			node, out[i] = n[idx], idx
		default:
			return nil, false
		}
	}
	return out, true
}

// arrayIndex parses a JSON Pointer token that names a list element: "0", or digits without a leading zero.
func arrayIndex(token string) (int, bool) {
	if token == "" || (token[0] == '0' && len(token) > 1) || strings.Trim(token, "0123456789") != "" {
		return 0, false
	}
	i, err := strconv.Atoi(token)
	return i, err == nil
}

// appliedFields returns the fields manager owns through server-side apply on obj, as the FieldsV1 tree
// ("f:<key>", "k:<key fields>", "v:<value>" and "i:<index>" children, "." for the node itself), or nil.
func appliedFields(obj *unstructured.Unstructured, manager string) map[string]any {
	for _, e := range obj.GetManagedFields() {
		if e.Manager != manager || e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "" || e.FieldsV1 == nil {
			continue
		}
		var set map[string]any
		if json.Unmarshal(e.FieldsV1.Raw, &set) == nil {
			return set
		}
	}
	return nil
}

// owned returns the part of the live object at path (a path in desired) that set covers, and whether
// there is one. A list element is matched to set, and then to its counterpart in live, by its keys.
func owned(set map[string]any, desired, live any, path []any) (any, bool) {
	for _, step := range path {
		if set == nil {
			return nil, false
		}
		var ok bool
		if len(set) == 0 {
			// An atomic value, owned whole: the rest of the path follows positions.
			if live, ok = child(live, step); !ok {
				return nil, false
			}
			continue
		}
		if k, isKey := step.(string); isKey {
			set, _ = set["f:"+k].(map[string]any)
			desired, _ = child(desired, k)
			if live, ok = child(live, k); !ok {
				return nil, false
			}
			continue
		}
		elem, _ := child(desired, step)
		desc, sub := elementEntry(set, elem, step.(int))
		if sub == nil {
			return nil, false
		}
		list, _ := live.([]any)
		at := -1
		for i, e := range list {
			if matchesElement(desc, e, i) {
				at = i
				break
			}
		}
		if at < 0 {
			return nil, false
		}
		set, desired, live = sub, elem, list[at]
	}
	return ownedPart(set, live)
}

// ownedPart returns the parts of v that set covers.
func ownedPart(set map[string]any, v any) (any, bool) {
	if set == nil {
		return nil, false
	}
	if len(set) == 0 {
		return v, true
	}
	_, self := set["."]
	switch n := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, c := range n {
			sub, _ := set["f:"+k].(map[string]any)
			if p, ok := ownedPart(sub, c); ok {
				out[k] = p
			}
		}
		return out, self || len(out) > 0
	case []any:
		out := []any{}
		for i, e := range n {
			if _, sub := elementEntry(set, e, i); sub != nil {
				if p, ok := ownedPart(sub, e); ok {
					out = append(out, p)
				}
			}
		}
		return out, self || len(out) > 0
	}
	return v, true
}

// elementEntry finds the entry of set that describes the list element elem at index i.
func elementEntry(set map[string]any, elem any, i int) (string, map[string]any) {
	for desc, sub := range set {
		if m, ok := sub.(map[string]any); ok && matchesElement(desc, elem, i) {
			return desc, m
		}
	}
	return "", nil
}

// matchesElement reports whether a FieldsV1 list entry describes elem at index i: by its key fields
// (k:), its whole value (v:) or its position (i:).
func matchesElement(desc string, elem any, i int) bool {
	kind, raw, _ := strings.Cut(desc, ":")
	switch kind {
	case "k":
		var keys map[string]any
		return json.Unmarshal([]byte(raw), &keys) == nil && contains(elem, keys)
	case "v":
		var v any
		return json.Unmarshal([]byte(raw), &v) == nil && contains(elem, v) && contains(v, elem)
	case "i":
		return raw == strconv.Itoa(i)
	}
	return false
}

func child(v any, step any) (any, bool) {
	switch n := v.(type) {
	case map[string]any:
		k, ok := step.(string)
		if !ok {
			return nil, false
		}
		c, ok := n[k]
		return c, ok
	case []any:
		i, ok := step.(int)
		if !ok || i < 0 || i >= len(n) {
			return nil, false
		}
		return n[i], true
	}
	return nil, false
}

// setAt replaces the value at path in node, if there is one, and returns node.
func setAt(node any, path []any, v any) any {
	if len(path) == 0 {
		return v
	}
	if c, ok := child(node, path[0]); ok {
		switch n := node.(type) {
		case map[string]any:
			n[path[0].(string)] = setAt(c, path[1:], v)
		case []any:
			n[path[0].(int)] = setAt(c, path[1:], v)
		}
	}
	return node
}

// removeAll removes paths from obj: the deepest and, within a list, the last first, so that removing one
// does not move another.
func removeAll(obj map[string]any, paths [][]any) {
	paths = slices.Clone(paths)
	slices.SortFunc(paths, func(a, b []any) int { return comparePaths(b, a) })
	paths = slices.CompactFunc(paths, func(a, b []any) bool { return comparePaths(a, b) == 0 })
	for _, p := range paths {
		removeAt(obj, p)
	}
}

// removeAt removes the value at path (not empty) from node and returns node.
func removeAt(node any, path []any) any {
	c, ok := child(node, path[0])
	if !ok {
		return node
	}
	switch n := node.(type) {
	case map[string]any:
		if len(path) == 1 {
			delete(n, path[0].(string))
		} else {
			n[path[0].(string)] = removeAt(c, path[1:])
		}
	case []any:
		i := path[0].(int)
		if len(path) == 1 {
			return append(n[:i:i], n[i+1:]...)
		}
		n[i] = removeAt(c, path[1:])
	}
	return node
}

func comparePaths(a, b []any) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		ai, aIsIndex := a[i].(int)
		bi, bIsIndex := b[i].(int)
		var c int
		switch {
		case aIsIndex && bIsIndex:
			c = cmp.Compare(ai, bi)
		case aIsIndex:
			c = -1 // an index sorts before a key; they never share a parent
		case bIsIndex:
			c = 1
		default:
			c = strings.Compare(a[i].(string), b[i].(string))
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}
