package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// `kubectl ferry diff appconfig` answers, before a change is delivered, what it would change on each
// cluster: while an AppConfig is annotated ferry.io/report-only, ferry-hub writes each of its clusters a
// preview ManifestWork that applies nothing, and the cluster's agent reports on it, object by object,
// what applying it would change against the live objects. The command reads those reports from the
// previews, or, for a user who may not list ManifestWorks (a tenant), from the AppConfig's status.diff.

// diffPoll is how often --wait looks again.
const diffPoll = time.Second

func newDiffCommand(conn *connection) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "diff",
		Short: "What a report-only change would change on each cluster, against the live objects",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newDiffAppConfigCommand(conn))
	return cmd
}

func newDiffAppConfigCommand(conn *connection) *cobra.Command {
	var cluster string
	var waitFor bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:     "appconfig NAME [-n NAMESPACE] [--cluster CLUSTER] [--wait [--timeout DURATION]]",
		Aliases: []string{"appconfigs", "applicationconfiguration", "applicationconfigurations"},
		Short:   "Per cluster and object, what the spec of a report-only AppConfig would change: created, or each field's live and wanted value",
		Long: "Prints, for each cluster of a report-only AppConfig (annotated " + v1alpha2.AnnotationReportOnly + "=true), what\n" +
			"applying its spec would change there, as the cluster's agent reported it on the AppConfig's preview: each\n" +
			"object that would be created, or each field that would change as PATH: LIVE → WANT (at most " +
			fmt.Sprint(workreport.MaxDiffFields) + " fields an\n" +
			"object, the others counted), the clusters where nothing would change, and those whose agent has not\n" +
			"reported yet. Nothing is applied meanwhile. A user who may not list ManifestWorks is shown the AppConfig's\n" +
			"status.diff, which names at most " + fmt.Sprint(v1alpha2.MaxDiffObjectsListed) + " objects and counts the rest.\n" +
			"Fails, saying how to set the annotation, when the AppConfig is not report only.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout < 0 || (cmd.Flags().Changed("timeout") && !waitFor) {
				return errors.New("--timeout bounds --wait, and must not be negative")
			}
			ns, clients, err := conn.target()
			if err != nil {
				return err
			}
			d := &appConfigDiff{clients: clients, namespace: ns, name: args[0], cluster: cluster}
			if err := d.load(cmd.Context()); err != nil {
				return err
			}
			if waitFor {
				if err := d.wait(cmd.Context(), timeout); err != nil {
					return err
				}
			}
			d.write(cmd.OutOrStdout())
			return nil
		},
	}
	cmd.Flags().StringVar(&cluster, "cluster", "", "Show the managed `CLUSTER` alone.")
	cmd.Flags().BoolVar(&waitFor, "wait", false, "Wait until every cluster reported on the AppConfig's current generation, then print.")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "With --wait: fail after this long, naming the clusters not reported yet.")
	return cmd
}

// appConfigDiff is what diff appconfig shows: the AppConfig, and its previews unless the user may not
// list them (statusOnly).
type appConfigDiff struct {
	clients         *hubClients
	namespace, name string
	cluster         string

	app        *v1alpha2.ApplicationConfiguration
	previews   []workv1.ManifestWork // sorted by cluster
	statusOnly bool
}

// load reads the AppConfig and its previews; an AppConfig that is not report only is an error saying
// how to make it one.
func (d *appConfigDiff) load(ctx context.Context) error {
	app, err := readAppConfig(ctx, d.clients, d.namespace, d.name)
	if err != nil {
		return err
	}
	if !v1alpha2.ReportOnly(app.Annotations) {
		return fmt.Errorf("AppConfig %s/%s is delivered, not report only: nothing is previewed. To see what a change would do before it is delivered, "+
			"set the annotation, then edit the spec:\n  kubectl annotate applicationconfiguration %s -n %s %s=true\n"+
			"and remove it to deliver: kubectl annotate applicationconfiguration %s -n %s %s-",
			d.namespace, d.name, d.name, d.namespace, v1alpha2.AnnotationReportOnly, d.name, d.namespace, v1alpha2.AnnotationReportOnly)
	}
	d.app = app
	ofApp := labels.SelectorFromSet(labels.Set{v1alpha2.LabelPreviewOfNamespace: d.namespace, v1alpha2.LabelPreviewOfName: d.name}).String()
	list, err := d.clients.works.WorkV1().ManifestWorks(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: ofApp})
	switch {
	case apierrors.IsForbidden(err):
		d.statusOnly, d.previews = true, nil
		return nil
	case err != nil:
		return fmt.Errorf("list the previews of AppConfig %s/%s: %w", d.namespace, d.name, err)
	}
	d.previews = list.Items
	slices.SortFunc(d.previews, func(a, b workv1.ManifestWork) int { return strings.Compare(a.Namespace, b.Namespace) })
	return nil
}

// previewed reports whether the hub previewed the AppConfig's current generation and every cluster
// reported on it (the Previewed condition, which the status-only view has too), and which clusters
// have not.
func (d *appConfigDiff) previewed() (bool, []string) {
	c := meta.FindStatusCondition(d.app.Status.Conditions, v1alpha2.ConditionPreviewed)
	s := d.app.Status.Diff
	if s == nil || s.Generation != d.app.Generation || c == nil || c.ObservedGeneration != d.app.Generation {
		return false, []string{"(the hub has not previewed generation " + fmt.Sprint(d.app.Generation) + " yet)"}
	}
	return c.Status == metav1.ConditionTrue, s.Pending
}

// wait loads the diff again every diffPoll until every cluster reported on the current generation,
// failing after timeout (0: none) with the clusters still awaited.
func (d *appConfigDiff) wait(ctx context.Context, timeout time.Duration) error {
	deadline := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		deadline, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var pending []string
	err := wait.PollUntilContextCancel(deadline, diffPoll, true, func(context.Context) (bool, error) {
		var done bool
		if done, pending = d.previewed(); done {
			return true, nil
		}
		return false, d.load(ctx) // a read is not cut short by the deadline, which ends the wait between reads
	})
	if err != nil && deadline.Err() != nil {
		return fmt.Errorf("AppConfig %s/%s: not every cluster reported on its preview after %s; waiting for %s", d.namespace, d.name, timeout, strings.Join(pending, ", "))
	}
	return err
}

// write prints the diff: a heading with the hub's counts, then each cluster.
func (d *appConfigDiff) write(w io.Writer) {
	app := d.app
	fmt.Fprintf(w, "AppConfig %s/%s, report only (nothing is delivered), generation %d", d.namespace, d.name, app.Generation)
	if c := meta.FindStatusCondition(app.Status.Conditions, v1alpha2.ConditionPreviewed); c != nil && app.Status.Diff != nil {
		fmt.Fprintf(w, ": %s", c.Message)
		if app.Status.Diff.Generation != app.Generation {
			fmt.Fprintf(w, " (of generation %d: the hub has not previewed the current one yet)", app.Status.Diff.Generation)
		}
	}
	fmt.Fprintln(w)
	if d.statusOnly {
		d.writeFromStatus(w)
		return
	}
	shown := 0
	for i := range d.previews {
		mw := &d.previews[i]
		if d.cluster != "" && mw.Namespace != d.cluster {
			continue
		}
		shown++
		writeClusterDiff(w, mw)
	}
	if d.cluster != "" && shown == 0 {
		fmt.Fprintf(w, "cluster %s: no preview (is it one of the AppConfig's clusters, and has the hub written its preview yet?)\n", d.cluster)
	}
	if s := app.Status.Diff; d.cluster == "" && s != nil {
		for _, c := range s.Pending {
			if !slices.ContainsFunc(d.previews, func(mw workv1.ManifestWork) bool { return mw.Namespace == c }) {
				fmt.Fprintf(w, "cluster %s: no preview yet\n", c)
			}
		}
	}
}

// writeClusterDiff prints what the agent of mw's cluster reported on the preview mw.
func writeClusterDiff(w io.Writer, mw *workv1.ManifestWork) {
	if workreport.WorkCondition(mw.Status.Conditions, workreport.ConditionWouldChange, mw.Generation) == nil {
		fmt.Fprintf(w, "cluster %s: not reported yet (its agent has not looked at the preview as it is now; is it ferry-agent?)\n", mw.Namespace)
		return
	}
	var changes strings.Builder
	matching := 0
	for _, m := range mw.Status.ResourceStatus.Manifests {
		diff, ok := workreport.DiffOf(m.Conditions, mw.Generation)
		rm := m.ResourceMeta
		switch {
		case !ok:
			fmt.Fprintf(&changes, "  %s: not reported yet\n", objectName(rm.Kind, rm.Namespace, rm.Name))
		case diff.Changes():
			writeObjectDiff(&changes, v1alpha2.ObjectDiff{Kind: rm.Kind, Namespace: rm.Namespace, Name: rm.Name, Create: diff.Create,
				Fields: fieldDiffs(diff.Fields), MoreFields: int32(diff.MoreFields)})
		default:
			matching++
		}
	}
	if changes.Len() == 0 {
		fmt.Fprintf(w, "cluster %s: no change (%d %s match the live objects)\n", mw.Namespace, matching, plural(matching, "object", "objects"))
		return
	}
	fmt.Fprintf(w, "cluster %s:\n%s", mw.Namespace, changes.String())
	if matching > 0 {
		fmt.Fprintf(w, "  %d more %s match the live objects\n", matching, plural(matching, "object", "objects"))
	}
}

// writeFromStatus prints status.diff, grouped by cluster, and says it is bounded.
func (d *appConfigDiff) writeFromStatus(w io.Writer) {
	s := d.app.Status.Diff
	if s == nil {
		fmt.Fprintln(w, "the hub has not previewed it yet (status.diff is empty)")
		return
	}
	var heading string
	for _, o := range s.Changes { // by cluster
		if d.cluster != "" && o.Cluster != d.cluster {
			continue
		}
		if o.Cluster != heading {
			heading = o.Cluster
			fmt.Fprintf(w, "cluster %s:\n", o.Cluster)
		}
		writeObjectDiff(w, o)
	}
	for _, c := range s.Pending {
		if d.cluster == "" || c == d.cluster {
			fmt.Fprintf(w, "cluster %s: not reported yet\n", c)
		}
	}
	if unlisted := int(s.Objects) - len(s.Changes); unlisted > 0 {
		fmt.Fprintf(w, "%d more objects would change, not listed\n", unlisted)
	}
	if matching := s.Reported - s.Changing; matching > 0 {
		fmt.Fprintf(w, "%d of the %d clusters reported no change\n", matching, s.Clusters)
	}
	fmt.Fprintf(w, "(from the AppConfig's status.diff, which names at most %d objects and %d fields of each: you may not list the previews, "+
		"ManifestWorks in the clusters' namespaces, which have all of it)\n", v1alpha2.MaxDiffObjectsListed, v1alpha2.MaxDiffFieldsListed)
}

// writeObjectDiff prints one object's diff: created, or its fields.
func writeObjectDiff(w io.Writer, o v1alpha2.ObjectDiff) {
	name := objectName(o.Kind, o.Namespace, o.Name)
	if o.Create {
		fmt.Fprintf(w, "  %s: would be created\n", name)
		return
	}
	fmt.Fprintf(w, "  %s:\n", name)
	for _, f := range o.Fields {
		fmt.Fprintf(w, "    %s: %s → %s\n", f.Path, f.Live, f.Want)
	}
	if o.MoreFields > 0 {
		fmt.Fprintf(w, "    and %d more %s\n", o.MoreFields, plural(int(o.MoreFields), "field", "fields"))
	}
}

func fieldDiffs(fields []workreport.FieldChange) []v1alpha2.FieldDiff {
	out := make([]v1alpha2.FieldDiff, 0, len(fields))
	for _, f := range fields {
		out = append(out, v1alpha2.FieldDiff{Path: f.Path, Live: f.Live, Want: f.Want})
	}
	return out
}

// objectName is "Kind namespace/name", or "Kind name" for a cluster-scoped object.
func objectName(kind, namespace, name string) string {
	if namespace == "" {
		return kind + " " + name
	}
	return kind + " " + namespace + "/" + name
}
