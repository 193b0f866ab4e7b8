package statusview

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
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
	return []any{m.Kind, namespacedName(m.Namespace, m.Name), dash(m.Strategy), m.Applied, m.Available, m.Health,
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
	n, applied, available, healthy := len(v.Clusters), "", "", ""
	if v.StatusOnly {
		// The hub's counts: the status names only some of the clusters.
		n, applied, available, healthy = 0, "0/0", "0/0", "-"
		if s := v.Summary; s != nil {
			n, applied, available, healthy = int(s.Clusters), s.Applied, s.Available, dash(s.Healthy)
		}
	} else {
		a, av, h := 0, 0, 0
		for _, c := range v.Clusters {
			a += count(c.Applied == metav1.ConditionTrue)
			av += count(c.Available == metav1.ConditionTrue)
			h += count(c.Healthy)
		}
		applied, available, healthy = fmt.Sprintf("%d/%d", a, n), fmt.Sprintf("%d/%d", av, n), fmt.Sprintf("%d/%d", h, n)
	}
	tw := newTabWriter(w)
	row(tw, "APPCONFIG", "READY", "CLUSTERS", "APPLIED", "AVAILABLE", "HEALTHY", "MESSAGE")
	row(tw, namespacedName(v.Namespace, v.Name), v.Ready, n, applied, available, healthy, short(v.ReadyMessage))
	if err := tw.Flush(); err != nil {
		return err
	}
	if v.NotBound != nil {
		fmt.Fprintf(w, "\n%s\n", v.NotBound.line(v.Namespace))
	}
	if len(v.Clusters) > 0 {
		fmt.Fprintln(w)
		tw = newTabWriter(w)
		row(tw, append([]any{"CLUSTER"}, manifestColumns...)...)
		for _, c := range v.Clusters {
			if len(c.Manifests) == 0 && v.StatusOnly {
				// All the status says of the cluster: its verdicts.
				row(tw, c.Cluster, "-", "-", "-", c.Applied, c.Available, c.Health, "-", "-")
			}
			for _, m := range c.Manifests {
				row(tw, append([]any{c.Cluster}, manifestCells(m)...)...)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, c := range v.Clusters {
			if c.OmittedManifests > 0 {
				fmt.Fprintf(w, "(%s: and %d more manifests that are not fine)\n", c.Cluster, c.OmittedManifests)
			}
		}
	}
	if v.MoreClusters > 0 {
		fmt.Fprintf(w, "(and %d more)\n", v.MoreClusters)
	}
	if v.OmittedClusters > 0 {
		fmt.Fprintf(w, "(%d clusters that are not fine are not listed in the AppConfig's status)\n", v.OmittedClusters)
	}
	if v.Drift != nil {
		if err := writeDrift(w, v.Drift); err != nil {
			return err
		}
	}
	if v.StatusOnly {
		fmt.Fprintf(w, "\n%s\n", StatusOnlyNote)
	}
	return nil
}

// writeDrift writes the counts of an AppConfig's drift and a row per object its status names.
func writeDrift(w io.Writer, d *v1alpha2.DriftStatus) error {
	fmt.Fprintf(w, "\nDrifted (changed on the cluster and put back): %d objects on %d clusters; the latest:\n", d.Objects, d.Clusters)
	tw := newTabWriter(w)
	row(tw, "CLUSTER", "KIND", "NAMESPACE/NAME", "CHANGED-BY", "FIELDS", "COUNT", "LAST-CHANGED")
	for _, o := range d.Latest {
		fields := strings.Join(o.Fields, ",")
		if o.MoreFields > 0 {
			fields += fmt.Sprintf(" (and %d more)", o.MoreFields)
		}
		row(tw, o.Cluster, o.Kind, namespacedName(o.Namespace, o.Name), dash(strings.Join(o.Managers, ",")), dash(fields), o.Count, timestamp(&o.Time))
	}
	return tw.Flush()
}

// line says, in one line, which clusters are not bound and what becomes of them.
func (nb NotBound) line(namespace string) string {
	head := "ClustersBound False (" + nb.Reason + ")"
	if len(nb.Refused) == 0 {
		return head + ": " + strings.Join(strings.Fields(nb.Message), " ")
	}
	clusters := strings.Join(nb.Refused, ", ")
	if more := int(nb.RefusedClusters) - len(nb.Refused); more > 0 {
		clusters += fmt.Sprintf(" (and %d more)", more)
	}
	what, is, gets := fmt.Sprintf("%d clusters", nb.RefusedClusters), "are", "get"
	if nb.RefusedClusters == 1 {
		what, is, gets = "1 cluster", "is", "gets"
	}
	outcome := "and " + gets + " no ManifestWork"
	if nb.Reason == v1alpha2.ReasonClustersNotBoundAudit {
		outcome = "(the hub only audits its bindings, and delivers all the same)"
	}
	return fmt.Sprintf("%s: %s of the placement %s in no ManagedClusterSet bound to namespace %s %s: %s", head, what, is, namespace, outcome, clusters)
}

func (v Clusters) writeTable(w io.Writer) error {
	tw := newTabWriter(w)
	row(tw, "NAME", "JOINED", "AVAILABLE", "REGISTERED-BY", "WORKS", "MESSAGE")
	for _, c := range v.Clusters {
		row(tw, c.Name, c.Joined, c.Available, c.RegisteredBy, c.Works, short(c.Message))
	}
	return tw.Flush()
}

func (r Rollout) writeTable(w io.Writer) error {
	if !r.Enabled {
		_, err := fmt.Fprintln(w, r.noRollout())
		return err
	}
	// The hub's message names the command to run next: it is printed whole.
	var notes []string
	if !r.Observed {
		notes = append(notes, fmt.Sprintf("the hub has not looked at generation %d of the AppConfig yet", r.Generation))
	}
	if len(r.Requests) > 0 {
		notes = append(notes, "requested: "+strings.Join(r.Requests, ", "))
	}
	switch {
	case r.Revision == "":
		notes = append(notes, "the hub has not reported on the rollout yet")
	case r.Message != "":
		notes = append(notes, r.Message)
	}
	tw := newTabWriter(w)
	row(tw, "APPCONFIG", "REVISION", "STABLE", "PHASE", "STAGE", "MESSAGE")
	row(tw, namespacedName(r.Namespace, r.Name), dash(r.Revision), dash(r.StableRevision), dash(string(r.Phase)), dash(r.Stage),
		dash(strings.Join(strings.Fields(strings.Join(notes, "; ")), " ")))
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Stages) > 0 {
		fmt.Fprintln(w)
		tw = newTabWriter(w)
		row(tw, "STAGE", "CLUSTERS", "UPDATED", "SUCCEEDED", "FAILED", "STARTED", "COMPLETED")
		for _, s := range r.Stages {
			row(tw, s.Name, s.Clusters, s.Updated, s.Succeeded, s.Failed, timestamp(s.StartedAt), timestamp(s.CompletedAt))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.Failures) > 0 || r.OmittedFailures > 0 {
		fmt.Fprintln(w)
		tw = newTabWriter(w)
		row(tw, "CLUSTER", "STAGE", "REASON", "MESSAGE")
		for _, f := range r.Failures {
			row(tw, f.Cluster, f.Stage, f.Reason, short(f.Message))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if r.OmittedFailures > 0 {
			fmt.Fprintf(w, "and %d more\n", r.OmittedFailures)
		}
	}
	return nil
}

func (h RolloutHistory) writeTable(w io.Writer) error {
	if len(h.Revisions) == 0 {
		_, err := fmt.Fprintf(w, "No revisions of AppConfig %s/%s are recorded yet.\n", h.Namespace, h.Name)
		return err
	}
	tw := newTabWriter(w)
	row(tw, "REVISION", "NAME", "CREATED", "ROLLOUT")
	for _, r := range h.Revisions {
		mark := "-"
		switch {
		case r.RollingOut:
			mark = "rolling-out"
		case r.Stable:
			mark = "stable"
		}
		row(tw, r.Revision, r.Name, timestamp(&r.Created), mark)
	}
	return tw.Flush()
}

// timestamp is t in UTC to the second, as kubectl's -o yaml writes it; "-" when unset.
func timestamp(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// dash is s, or "-" when empty, so that every row has the same number of columns.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
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
