package workreport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationReportDiff, "true" on a ManifestWork whose manifests are all ReadOnly, asks Ferry's agent to
// report, for each manifest, what applying it would change on the cluster — the live object against the
// manifest — in a WouldChange condition, and to change nothing. It is how a revision is delivered report
// only: the work is valid OCM (ReadOnly only reads, so OCM's agent, which does not know the annotation,
// writes nothing either), and it owns nothing, so deleting it deletes nothing.
const AnnotationReportDiff = "ferry.io/report-diff"

// ConditionWouldChange is Ferry's condition, on a manifest and on its work, saying what applying the
// manifest would change on the cluster: True with ReasonDiffersFromLive or ReasonWouldCreate, False with
// ReasonMatchesLive. Like Drifted, it is a plain condition, so that every client of OCM's API shows it.
const ConditionWouldChange = "WouldChange"

// Reasons of a WouldChange condition.
const (
	// ReasonDiffersFromLive: the live object does not hold the manifest; the message names the fields.
	ReasonDiffersFromLive = "DiffersFromLive"
	// ReasonWouldCreate: there is no such object on the cluster.
	ReasonWouldCreate = "WouldCreate"
	// ReasonMatchesLive: the live object holds the manifest; applying it would change nothing.
	ReasonMatchesLive = "MatchesLive"
)

// MaxDiffFields bounds the fields a WouldChange condition lists; the others are counted.
const MaxDiffFields = 5

// maxDiffValue bounds a value as a WouldChange condition shows it, in bytes of JSON.
const maxDiffValue = 80

// HiddenValue is how a diff shows a value it must not show (a Secret's data).
const HiddenValue = `"(hidden)"`

// FieldChange is one field a manifest would change on its object.
type FieldChange struct {
	// Path is the field, as Ferry's field paths write it (".spec.replicas", ".metadata.labels[app]").
	Path string
	// Live and Want are the field's value on the cluster and in the manifest, as JSON: "null" for a
	// field the object does not have; a value too long to show is cut and shown as a JSON string
	// ending in "…"; HiddenValue for a Secret's data.
	Live, Want string
}

// Diff is what a manifest's WouldChange condition says.
type Diff struct {
	// Create: the object does not exist, and applying the manifest would create it.
	Create bool
	// Fields are some of the fields that would change, sorted by path; MoreFields counts the others.
	Fields     []FieldChange
	MoreFields int
}

// Changes reports whether applying the manifest would change anything.
func (d Diff) Changes() bool { return d.Create || len(d.Fields) > 0 || d.MoreFields > 0 }

// DiffValue is v as a diff shows it: compact JSON, cut to a JSON string of its beginning and "…" when
// long.
func DiffValue(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		raw = []byte(fmt.Sprintf("%q", fmt.Sprint(v)))
	}
	if len(raw) <= maxDiffValue {
		return string(raw)
	}
	text := string(raw)
	if s, ok := v.(string); ok {
		text = s // a string is cut, not its quotes and escapes
	}
	cut := text[:min(len(text), maxDiffValue-8)]
	for !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	quoted, _ := json.Marshal(cut + "…")
	return string(quoted)
}

// DiffCondition is a manifest's WouldChange condition for d, whose message ReadDiff reads back.
func DiffCondition(d Diff) metav1.Condition {
	switch {
	case d.Create:
		return metav1.Condition{Type: ConditionWouldChange, Status: metav1.ConditionTrue, Reason: ReasonWouldCreate,
			Message: "Does not exist on the cluster; applying the manifest would create it"}
	case !d.Changes():
		return metav1.Condition{Type: ConditionWouldChange, Status: metav1.ConditionFalse, Reason: ReasonMatchesLive,
			Message: "The live object holds the manifest; applying it would change nothing"}
	}
	var b strings.Builder
	n := len(d.Fields) + d.MoreFields
	fmt.Fprintf(&b, "Would change %d %s: ", n, plural(n, "field", "fields"))
	for i, f := range d.Fields {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s → %s", f.Path, f.Live, f.Want)
	}
	if d.MoreFields > 0 {
		fmt.Fprintf(&b, "; and %d more", d.MoreFields)
	}
	return metav1.Condition{Type: ConditionWouldChange, Status: metav1.ConditionTrue, Reason: ReasonDiffersFromLive, Message: b.String()}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

var (
	diffHead = regexp.MustCompile(`^Would change (\d+) fields?: `)
	diffMore = regexp.MustCompile(`^; and (\d+) more$`)
)

// DiffOf is what a manifest's WouldChange condition among conds says about the work's generation gen;
// false when there is none for gen (the agent has not looked yet).
func DiffOf(conds []metav1.Condition, gen int64) (Diff, bool) {
	return ReadDiff(aboutGeneration(conds, ConditionWouldChange, gen))
}

// ReadDiff reads a manifest's WouldChange condition back; false when c is not one of Ferry's format.
func ReadDiff(c *metav1.Condition) (Diff, bool) {
	if c == nil || c.Type != ConditionWouldChange {
		return Diff{}, false
	}
	switch c.Reason {
	case ReasonWouldCreate:
		return Diff{Create: true}, true
	case ReasonMatchesLive:
		return Diff{}, true
	case ReasonDiffersFromLive:
	default:
		return Diff{}, false
	}
	m := diffHead.FindStringSubmatch(c.Message)
	if m == nil {
		return Diff{}, false
	}
	total, _ := strconv.Atoi(m[1])
	rest := c.Message[len(m[0]):]
	var d Diff
	for rest != "" {
		if mm := diffMore.FindStringSubmatch(rest); mm != nil {
			d.MoreFields, _ = strconv.Atoi(mm[1])
			break
		}
		rest = strings.TrimPrefix(rest, "; ")
		f, after, ok := readFieldChange(rest)
		if !ok {
			return Diff{}, false
		}
		d.Fields = append(d.Fields, f)
		rest = after
	}
	if len(d.Fields)+d.MoreFields != total {
		return Diff{}, false
	}
	return d, true
}

// readFieldChange reads "PATH: LIVE → WANT" from the start of s, LIVE and WANT being JSON values.
func readFieldChange(s string) (FieldChange, string, bool) {
	i := strings.Index(s, ": ")
	if i <= 0 {
		return FieldChange{}, "", false
	}
	f := FieldChange{Path: s[:i]}
	live, rest, ok := readJSONValue(s[i+2:])
	if !ok || !strings.HasPrefix(rest, " → ") {
		return FieldChange{}, "", false
	}
	want, rest, ok := readJSONValue(strings.TrimPrefix(rest, " → "))
	if !ok {
		return FieldChange{}, "", false
	}
	f.Live, f.Want = live, want
	return f, rest, true
}

// readJSONValue reads one JSON value from the start of s and returns it and what follows it.
func readJSONValue(s string) (string, string, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return "", "", false
	}
	n := int(dec.InputOffset())
	return string(bytes.TrimSpace([]byte(s[:n]))), s[n:], true
}

// WorkDiffCondition is a work's own WouldChange condition, when changing of its total manifests would
// change (created ones among them).
func WorkDiffCondition(changing, total int) metav1.Condition {
	if changing == 0 {
		return metav1.Condition{Type: ConditionWouldChange, Status: metav1.ConditionFalse, Reason: ReasonMatchesLive,
			Message: fmt.Sprintf("Applying the work would change none of its %d %s", total, plural(total, "object", "objects"))}
	}
	return metav1.Condition{Type: ConditionWouldChange, Status: metav1.ConditionTrue, Reason: ReasonDiffersFromLive,
		Message: fmt.Sprintf("Applying the work would change %d of its %d %s", changing, total, plural(total, "object", "objects"))}
}
