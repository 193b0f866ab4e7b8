package feedback

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/jsonpath"
	workv1 "open-cluster-management.io/api/work/v1"
)

// DefaultMaxJSONRawLength is the longest JsonRaw value reported when Options.MaxJSONRawLength is zero. It is
// OCM's default and the maxLength of fieldValue.jsonRaw in the ManifestWork CRD, so a longer value would make
// the hub reject the whole status update.
const DefaultMaxJSONRawLength = 1024

// Errors a RuleError wraps, for callers that sort failures with errors.Is.
var (
	// ErrNoWellKnownStatus: a WellKnownStatus rule on a kind that has no well-known fields.
	ErrNoWellKnownStatus = errors.New("no well-known status fields")
	// ErrInvalidPath: the JSONPath does not parse, or fails on this object (for example an index past the
	// end of a list that is present).
	ErrInvalidPath = errors.New("invalid JSONPath")
	// ErrVersionMismatch: a JSONPaths entry names a version other than the object's.
	ErrVersionMismatch = errors.New("version does not match the object")
	// ErrNotSingleValue: the path matched more than one value and JsonRaw values are off.
	ErrNotSingleValue = errors.New("path matched more than one value")
	// ErrUnsupportedValue: the value is a map, a list or a non-integer number and JsonRaw values are off.
	ErrUnsupportedValue = errors.New("value is not an integer, string or boolean")
	// ErrJSONRawTooLong: the JSON form of the value is longer than the configured maximum.
	ErrJSONRawTooLong = errors.New("JSON value too long")
	// ErrDuplicateName: an earlier rule already reported a value under this name.
	ErrDuplicateName = errors.New("duplicate feedback name")
	// ErrInvalidRule: a rule of unknown type, or a JSONPaths entry without a name.
	ErrInvalidRule = errors.New("invalid feedback rule")
)

// RuleError is the failure of one feedback value (or of a whole rule, when Name is empty). It names the
// rule and the path so that the StatusFeedbackSynced message says which part of the ManifestWork to fix.
type RuleError struct {
	// Rule is the index of the rule in feedbackRules.
	Rule int
	// Type is the rule's type.
	Type workv1.FeedBackType
	// Name is the feedback value's name; empty when the rule failed as a whole.
	Name string
	// Path is the JSONPath evaluated; empty when the rule failed as a whole.
	Path string
	// Err says what went wrong; it wraps one of the Err* values above.
	Err error
}

func (e *RuleError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "feedbackRules[%d] (%s)", e.Rule, e.Type)
	if e.Name != "" || e.Path != "" {
		fmt.Fprintf(&b, " %q at path %q", e.Name, e.Path)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *RuleError) Unwrap() error { return e.Err }

// Options configures an Evaluator. The zero value behaves as OCM's work agent with its default flags.
type Options struct {
	// JSONRaw reports maps, lists, non-integer numbers and multi-value matches as JsonRaw values (their JSON
	// text) instead of failing. It is OCM's RawFeedbackJsonString feature gate, off by default there.
	JSONRaw bool
	// MaxJSONRawLength is the longest JsonRaw value, in bytes; longer values fail. Zero means
	// DefaultMaxJSONRawLength. Values above it only make sense against a hub whose CRD allows them.
	MaxJSONRawLength int
}

// Evaluator evaluates feedback rules. It keeps no state between calls and is safe for concurrent use.
type Evaluator struct {
	opts Options
}

// New returns an Evaluator with opts.
func New(opts Options) *Evaluator {
	if opts.MaxJSONRawLength <= 0 {
		opts.MaxJSONRawLength = DefaultMaxJSONRawLength
	}
	return &Evaluator{opts: opts}
}

// Evaluate returns the values rules select from obj and, when some could not be computed, a join of
// *RuleError naming each failed rule and path. The values that could be computed are returned either way,
// so the agent can report them while setting StatusFeedbackSynced=False.
//
// A path that matches nothing (an absent field, a null, a filter without a match) yields no value and no
// error. Values come in spec order: rule by rule as in feedbackRules, and within a rule in jsonPaths order
// or in the well-known table's order. That is the order OCM reports, and it depends only on the spec, so
// repeated evaluations of an unchanged object compare equal and cause no status write. Each name is reported
// once, because statusFeedback.values is a list keyed by name that the hub rejects with duplicates: a later
// rule that reuses a name is skipped with ErrDuplicateName.
func (e *Evaluator) Evaluate(obj *unstructured.Unstructured, rules []workv1.FeedbackRule) ([]workv1.FeedbackValue, error) {
	if len(rules) == 0 {
		return nil, nil
	}
	if obj == nil {
		return nil, errors.New("evaluate feedback rules: no object")
	}
	gvk := obj.GroupVersionKind()
	var (
		values []workv1.FeedbackValue
		errs   []error
		seen   = map[string]int{} // value name -> index of the rule that claimed it
	)
	for i, rule := range rules {
		var paths []workv1.JsonPath
		switch rule.Type {
		case workv1.WellKnownStatusType:
			paths = wellKnown[gvk]
			if len(paths) == 0 {
				errs = append(errs, &RuleError{Rule: i, Type: rule.Type,
					Err: fmt.Errorf("%w for %s; use a JSONPaths rule", ErrNoWellKnownStatus, gvkString(obj))})
				continue
			}
		case workv1.JSONPathsType:
			paths = rule.JsonPaths
		default:
			errs = append(errs, &RuleError{Rule: i, Type: rule.Type,
				Err: fmt.Errorf("%w: unknown type %q, want %s or %s", ErrInvalidRule, rule.Type,
					workv1.WellKnownStatusType, workv1.JSONPathsType)})
			continue
		}
		for _, p := range paths {
			fail := func(err error) {
				errs = append(errs, &RuleError{Rule: i, Type: rule.Type, Name: p.Name, Path: p.Path, Err: err})
			}
			if p.Name == "" {
				fail(fmt.Errorf("%w: the name is empty", ErrInvalidRule))
				continue
			}
			if strings.TrimSpace(p.Path) == "" {
				// An empty expression would select the whole object; no one means that.
				fail(fmt.Errorf("%w: the path is empty", ErrInvalidRule))
				continue
			}
			if first, dup := seen[p.Name]; dup {
				fail(fmt.Errorf("%w: feedbackRules[%d] already reports %q", ErrDuplicateName, first, p.Name))
				continue
			}
			// Claim the name whether or not a value turns up, so which rule wins depends on the spec alone
			// and not on which fields the object happens to have yet.
			seen[p.Name] = i
			// Like OCM, a version pin that does not match the object is an error rather than a silent skip:
			// the user asked for a field of a version other than the one the agent read.
			if p.Version != "" && p.Version != gvk.Version {
				fail(fmt.Errorf("%w: path is for version %q, object is %s", ErrVersionMismatch, p.Version, gvkString(obj)))
				continue
			}
			v, ok, err := e.value(obj, p.Path)
			if err != nil {
				fail(err)
				continue
			}
			if !ok {
				continue
			}
			values = append(values, workv1.FeedbackValue{Name: p.Name, Value: v})
		}
	}
	return values, errors.Join(errs...)
}

// value evaluates one path. ok is false when the path selects nothing.
func (e *Evaluator) value(obj *unstructured.Unstructured, path string) (v workv1.FieldValue, ok bool, err error) {
	matches, err := find(obj, path)
	if err != nil || len(matches) == 0 {
		return v, false, err
	}
	var raw any
	switch {
	case len(matches) == 1:
		raw = matches[0]
	case !e.opts.JSONRaw:
		return v, false, fmt.Errorf("%w (%d); select one, for example with a filter [?(@.type==\"Ready\")], "+
			"or enable JsonRaw feedback on the agent", ErrNotSingleValue, len(matches))
	default:
		raw = matches
	}
	if raw == nil {
		// A null field is reported as absent, as OCM does.
		return v, false, nil
	}
	switch t := raw.(type) {
	case int64:
		return workv1.FieldValue{Type: workv1.Integer, Integer: &t}, true, nil
	case int:
		// Objects from the API server hold int64; int and int32 appear only in objects built in-process.
		n := int64(t)
		return workv1.FieldValue{Type: workv1.Integer, Integer: &n}, true, nil
	case int32:
		n := int64(t)
		return workv1.FieldValue{Type: workv1.Integer, Integer: &n}, true, nil
	case string:
		return workv1.FieldValue{Type: workv1.String, String: &t}, true, nil
	case bool:
		return workv1.FieldValue{Type: workv1.Boolean, Boolean: &t}, true, nil
	}
	if !e.opts.JSONRaw {
		return v, false, fmt.Errorf("%w (got %s); select a scalar field, or enable JsonRaw feedback on the agent",
			ErrUnsupportedValue, kindOf(raw))
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return v, false, fmt.Errorf("encode %s value as JSON: %w", kindOf(raw), err)
	}
	if len(b) > e.opts.MaxJSONRawLength {
		return v, false, fmt.Errorf("%w: %d bytes, limit %d", ErrJSONRawTooLong, len(b), e.opts.MaxJSONRawLength)
	}
	s := string(b)
	return workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: &s}, true, nil
}

// find returns every value path selects in obj. Paths are kubectl JSONPath expressions without the braces,
// evaluated from the object root (".status.replicas"), as current OCM does; missing keys select nothing.
func find(obj *unstructured.Unstructured, path string) (matches []any, err error) {
	// The path comes from a user's ManifestWork; a parser bug on odd input must fail this rule, not the agent.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: evaluation panicked: %v", ErrInvalidPath, r)
		}
	}()
	j := jsonpath.New("feedback").AllowMissingKeys(true)
	if err := j.Parse("{" + path + "}"); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPath, err)
	}
	results, err := j.FindResults(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPath, err)
	}
	for _, r := range results {
		for _, m := range r {
			matches = append(matches, m.Interface())
		}
	}
	return matches, nil
}

func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	case float64, float32:
		return "a non-integer number"
	default:
		return fmt.Sprintf("%T", v)
	}
}

func gvkString(obj *unstructured.Unstructured) string {
	return obj.GetAPIVersion() + " " + obj.GetKind()
}
