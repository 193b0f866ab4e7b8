package statusview

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// messageWidth is how many characters of a reason and message a table cell holds; -o yaml has all.
const messageWidth = 60

// newTabWriter aligns columns as kubectl's tables do.
func newTabWriter(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
}

func row(w io.Writer, cells ...any) {
	strs := make([]string, len(cells))
	for i, c := range cells {
		strs[i] = fmt.Sprint(c)
	}
	fmt.Fprintln(w, strings.Join(strs, "\t"))
}

var manifestColumns = []any{"KIND", "NAMESPACE/NAME", "STRATEGY", "APPLIED", "AVAILABLE", "HEALTH", "REASON/MESSAGE", "FEEDBACK"}

func manifestCells(m Manifest) []any {
	return []any{m.Kind, namespacedName(m.Namespace, m.Name), m.Strategy, m.Applied, m.Available, m.Health,
		short(reasonMessage(m.Reason, m.Message)), feedback(m)}
}

func (v Work) writeTable(w io.Writer) error {
	tw := newTabWriter(w)
	row(tw, "MANIFESTWORK", "CLUSTER", "APPLIED", "AVAILABLE", "HEALTH")
	row(tw, v.Name, v.Cluster, v.Applied, v.Available, v.Health)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = newTabWriter(w)
	row(tw, manifestColumns...)
	for _, m := range v.Manifests {
		row(tw, manifestCells(m)...)
	}
	return tw.Flush()
}

func (v AppConfig) writeTable(w io.Writer) error {
	applied, available, healthy := 0, 0, 0
	for _, c := range v.Clusters {
		applied += count(c.Applied == metav1.ConditionTrue)
		available += count(c.Available == metav1.ConditionTrue)
		healthy += count(c.Healthy)
	}
	n := len(v.Clusters)
	tw := newTabWriter(w)
	row(tw, "APPCONFIG", "READY", "CLUSTERS", "APPLIED", "AVAILABLE", "HEALTHY", "MESSAGE")
	row(tw, namespacedName(v.Namespace, v.Name), v.Ready, n, fmt.Sprintf("%d/%d", applied, n), fmt.Sprintf("%d/%d", available, n),
		fmt.Sprintf("%d/%d", healthy, n), short(v.ReadyMessage))
	if err := tw.Flush(); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = newTabWriter(w)
	row(tw, append([]any{"CLUSTER"}, manifestColumns...)...)
	for _, c := range v.Clusters {
		for _, m := range c.Manifests {
			row(tw, append([]any{c.Cluster}, manifestCells(m)...)...)
		}
	}
	return tw.Flush()
}

func (v Clusters) writeTable(w io.Writer) error {
	tw := newTabWriter(w)
	row(tw, "NAME", "JOINED", "AVAILABLE", "REGISTERED-BY", "WORKS", "MESSAGE")
	for _, c := range v.Clusters {
		row(tw, c.Name, c.Joined, c.Available, c.RegisteredBy, c.Works, short(c.Message))
	}
	return tw.Flush()
}

func count(b bool) int {
	if b {
		return 1
	}
	return 0
}

func namespacedName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

func reasonMessage(reason, message string) string {
	switch {
	case reason == "":
		return message
	case message == "":
		return reason
	}
	return reason + ": " + message
}

// short is s on one line, cut to messageWidth characters; "-" when empty, so that every row has the
// same number of columns for `awk` and `column`.
func short(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "-"
	}
	if r := []rune(s); len(r) > messageWidth {
		return string(r[:messageWidth-3]) + "..."
	}
	return s
}

// feedback is a manifest's feedback values as name=value,...; "-" when none.
func feedback(m Manifest) string {
	if len(m.Feedback) == 0 {
		return "-"
	}
	parts := make([]string, len(m.Feedback))
	for i, f := range m.Feedback {
		parts[i] = f.Name + "=" + strings.Join(strings.Fields(f.Value), "")
	}
	return strings.Join(parts, ",")
}
