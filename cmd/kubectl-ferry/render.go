package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/apprevision"
	"github.com/ferry-mc/ferry/pkg/override"
	"github.com/ferry-mc/ferry/pkg/render"
)

func newRenderCommand(conn *connection) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "render",
		Short: "What a cluster gets of an application: its ManifestWork, with the overrides that select the cluster applied",
		Args:  cobra.NoArgs,
	}
	var cluster, format, file, applyOnceOnly string
	appConfig := &cobra.Command{
		Use:   "appconfig (NAME | -f FILE) --cluster CLUSTER [-n NAMESPACE]",
		Short: "The ManifestWork the AppConfig's current revision, or one in a file, gives CLUSTER, with the overrides that select it",
		Long: "Prints the ManifestWork the AppConfig's current revision (the one rolling out, else the latest recorded: kubectl\n" +
			"ferry rollout history) gives CLUSTER: the revision's spec with the overrides that select the cluster applied, their\n" +
			"${cluster...} references filled from its ManagedCluster. It reads with your own rights: the AppConfig's revisions,\n" +
			"and the ManagedCluster (and, for overrides by decision group, the PlacementDecisions) the overrides read.\n" +
			"With -f, renders the ApplicationConfiguration of FILE (\"-\": standard input) before it is applied, as ferry-hub would:\n" +
			"with the Components FILE holds, the hub's others at their latest revision, the hub's TraitDefinitions, and\n" +
			"--apply-once-only as ferry-hub runs with it. Patch traits, whose controllers publish their patches on the hub, are\n" +
			"rendered only once applied.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "" && format != "yaml" && format != "json" {
				return fmt.Errorf("--output %q: want yaml (the default) or json", format)
			}
			if cluster == "" {
				return fmt.Errorf("--cluster is required: which cluster's ManifestWork to render")
			}
			if (len(args) == 1) == (file != "") {
				return fmt.Errorf("name an AppConfig on the hub, or give one in a file with -f, not both")
			}
			mode := render.ApplyOnceOnly(applyOnceOnly)
			if !slices.Contains([]render.ApplyOnceOnly{render.ApplyOnceOff, render.ApplyOnceOn, render.ApplyOnceForce}, mode) {
				return fmt.Errorf("--apply-once-only %q: want off, on or force", applyOnceOnly)
			}
			ns, clients, err := conn.target()
			if err != nil {
				return err
			}
			var r *rendered
			if file != "" {
				var f *appFile
				if f, err = readAppFile(file, cmd.InOrStdin(), ns); err == nil {
					r, err = renderFile(cmd.Context(), clients, file, f, cluster, mode)
				}
			} else {
				r, err = renderForCluster(cmd.Context(), clients, ns, args[0], cluster)
			}
			if err != nil {
				return err
			}
			return r.write(cmd.OutOrStdout(), format)
		},
	}
	appConfig.Flags().StringVar(&cluster, "cluster", "", "The managed `CLUSTER` to render for.")
	appConfig.Flags().StringVarP(&file, "filename", "f", "", "Render the ApplicationConfiguration (and the Components) of `FILE` instead of one on the hub.")
	appConfig.Flags().StringVar(&applyOnceOnly, "apply-once-only", string(render.ApplyOnceOff), "With -f: ferry-hub's --apply-once-only (off, on or force), which sets the strategies rendered.")
	appConfig.Flags().StringVarP(&format, "output", "o", "", "yaml (the default, after a comment line naming the revision and the overrides) or json.")
	cmd.AddCommand(appConfig)
	return cmd
}

// rendered is what render prints: a cluster's ManifestWork of a revision, and how it came to be.
type rendered struct {
	app *v1alpha2.ApplicationConfiguration
	// revision is the recorded revision rendered, or file the file.
	revision  *appsv1.ControllerRevision
	file      string
	overrides []string // the overrides that selected the cluster, in order
	work      *workv1.ManifestWork
	// keepsEarlier: the cluster's work also keeps earlier revisions' workloads (revision-enabled
	// traits), which only its stored work holds.
	keepsEarlier bool
}

// renderForCluster renders the current revision of the AppConfig name of namespace for cluster.
func renderForCluster(ctx context.Context, clients *hubClients, namespace, name, cluster string) (*rendered, error) {
	app, revs, err := appConfigAndRevisions(ctx, clients, namespace, name)
	if err != nil {
		return nil, err
	}
	current := currentRevision(app, revs)
	i := slices.IndexFunc(revs, func(r appsv1.ControllerRevision) bool { return r.Name == current })
	if i < 0 {
		return nil, fmt.Errorf("AppConfig %s has no recorded revision yet (is ferry-hub running, and is the AppConfig Ready?)", key(app))
	}
	rev := &revs[i]
	data, err := apprevision.Decode(rev)
	if err != nil {
		return nil, err
	}
	facts := override.Cluster{Name: cluster}
	if len(data.Overrides) > 0 {
		if facts, err = clusterFacts(ctx, clients, app, cluster, data.Overrides); err != nil {
			return nil, err
		}
	}
	spec, applied, err := specFor(data, facts)
	if err != nil {
		return nil, fmt.Errorf("revision %s cannot be rendered for cluster %s (ferry-hub delivers it nothing and says so on the AppConfig): %w", rev.Name, cluster, err)
	}
	work := &workv1.ManifestWork{
		TypeMeta: metav1.TypeMeta{APIVersion: workv1.GroupVersion.String(), Kind: "ManifestWork"},
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha2.ManifestWorkName(app.Namespace, app.Name), Namespace: cluster,
			Labels:      map[string]string{v1alpha2.LabelAppConfigNamespace: app.Namespace, v1alpha2.LabelAppConfigName: app.Name},
			Annotations: map[string]string{v1alpha2.AnnotationRevisionHash: rev.Labels[apprevision.LabelHash]}},
		Spec: spec,
	}
	return &rendered{app: app, revision: rev, overrides: applied, work: work, keepsEarlier: len(data.RevisionEnabled) > 0}, nil
}

// specFor is what a cluster with facts gets of the revision holding data: its work's spec, with the
// overrides that select the cluster applied, and the names of those overrides in order.
func specFor(data *apprevision.Data, facts override.Cluster) (workv1.ManifestWorkSpec, []string, error) {
	return override.ForCluster(data.Spec, data.Overrides, data.Components, facts)
}

// clusterFacts reads what overrides may read of cluster: its ManagedCluster, and its decision groups
// when an override selects by them.
func clusterFacts(ctx context.Context, clients *hubClients, app *v1alpha2.ApplicationConfiguration, cluster string, overrides []v1alpha2.Override) (override.Cluster, error) {
	mc, err := clients.clusters.ClusterV1().ManagedClusters().Get(ctx, cluster, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err):
		return override.Cluster{}, fmt.Errorf("the overrides of AppConfig %s read the facts of cluster %s, and you may not: rendering needs get on managedclusters.cluster.open-cluster-management.io %s: %w", key(app), cluster, cluster, err)
	case err != nil:
		return override.Cluster{}, fmt.Errorf("read ManagedCluster %s: %w", cluster, err)
	}
	var groups []string
	if p := app.Spec.Placement; p != nil && p.PlacementRef != nil &&
		slices.ContainsFunc(overrides, func(o v1alpha2.Override) bool { return len(o.DecisionGroups) > 0 }) {
		decisions, err := clients.clusters.ClusterV1beta1().PlacementDecisions(app.Namespace).List(ctx, metav1.ListOptions{
			LabelSelector: labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: p.PlacementRef.Name}).String()})
		if err != nil {
			return override.Cluster{}, fmt.Errorf("list the PlacementDecisions of Placement %s/%s (overrides select by decision group): %w", app.Namespace, p.PlacementRef.Name, err)
		}
		groups = override.DecisionGroups(decisions.Items)[cluster]
	}
	return override.ClusterOf(mc, groups), nil
}

// write prints r as YAML after a comment line, or as JSON.
func (r *rendered) write(out io.Writer, format string) error {
	// The work as the hub writes it: no status.
	work := struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Spec              workv1.ManifestWorkSpec `json:"spec"`
	}{r.work.TypeMeta, r.work.ObjectMeta, r.work.Spec}
	if format == "json" {
		data, err := json.MarshalIndent(work, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", data)
		return err
	}
	data, err := yaml.Marshal(work)
	if err != nil {
		return err
	}
	overrides := "none"
	if len(r.overrides) > 0 {
		overrides = strings.Join(r.overrides, ", ")
	}
	source := " from " + r.file + " (not applied)"
	if r.revision != nil {
		source = fmt.Sprintf(", revision %s (%s)", strconv.FormatInt(r.revision.Revision, 10), r.revision.Name)
	}
	header := fmt.Sprintf("# AppConfig %s%s for cluster %s; overrides: %s\n", key(r.app), source, r.work.Namespace, overrides)
	if r.keepsEarlier {
		header += "# (the cluster's work also keeps the workloads of earlier revisions of its revision-enabled components)\n"
	}
	_, err = fmt.Fprint(out, header+string(data))
	return err
}
