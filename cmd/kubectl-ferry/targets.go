package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/internal/statusview"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/apprevision"
	"github.com/ferry-mc/ferry/pkg/override"
	"github.com/ferry-mc/ferry/pkg/placement"
	"github.com/ferry-mc/ferry/pkg/rollout"
)

// listClustersRight is the right a user needs to work out a placement: every ManagedCluster, to match
// the placement's names or selector and the bound sets against.
const listClustersRight = "list managedclusters.cluster.open-cluster-management.io"

func newTargetsCommand(conn *connection) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "targets",
		Short: "Which clusters an application's placement reaches, and why the others are left out",
		Args:  cobra.NoArgs,
	}
	var cluster, format string
	appConfig := &cobra.Command{
		Use:     "appconfig NAME [-n NAMESPACE] [--cluster CLUSTER] [-o json]",
		Aliases: []string{"appconfigs", "applicationconfiguration", "applicationconfigurations"},
		Short:   "Per cluster of the AppConfig's placement: targeted or why not, its rollout stage, the revision its work carries, the overrides that select it",
		Long: "Works out, by the hub's own rules (pkg/placement), the clusters the AppConfig's spec.placement names: its cluster names,\n" +
			"its clusterSelector, or the PlacementDecisions of its placementRef. Each is TARGETED (gets the ManifestWork) or not, and\n" +
			"why: it has no ManagedCluster, it is being deleted, or it is in no ManagedClusterSet bound to the AppConfig's namespace.\n" +
			"STAGE is the spec.rollout stage that takes the cluster, REVISION the revision its ManifestWork carries (its recorded\n" +
			"name, as kubectl ferry rollout history lists it, else its hash; - for no work yet), OVERRIDES the spec.overrides that\n" +
			"select it, in order. --cluster (here a managed cluster, as for render) shows one cluster, also one the placement does\n" +
			"not match. It reads with your own rights; if you may not list ManagedClusters (a tenant of a shared hub), it prints\n" +
			"what the AppConfig's status holds instead, and names the right you lack.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "" && format != statusview.FormatJSON && format != statusview.FormatYAML {
				return fmt.Errorf("--output %q: want json or yaml (or none, for a table)", format)
			}
			ns, clients, err := conn.target()
			if err != nil {
				return err
			}
			r, err := targetsOf(cmd.Context(), clients, ns, args[0], cluster)
			if err != nil {
				return err
			}
			return r.write(cmd.OutOrStdout(), format)
		},
	}
	appConfig.Flags().StringVar(&cluster, "cluster", "", "Show only this managed `CLUSTER`, whether the placement matches it or not.")
	appConfig.Flags().StringVarP(&format, "output", "o", "", "json or yaml: print the targets as data instead of a table.")
	cmd.AddCommand(appConfig)
	return cmd
}

// targets is what `targets appconfig` prints.
type targets struct {
	// AppConfig is namespace/name.
	AppConfig string `json:"appConfig"`
	// Placement says how spec.placement names clusters: clusters, clusterSelector, placementRef, or none.
	Placement string `json:"placement"`
	// BoundSets are the ManagedClusterSets bound to the AppConfig's namespace; nil when not read.
	BoundSets []string `json:"boundSets"`
	// ClusterSetBindings is how the hub holds the placement to them, as the AppConfig's status records
	// it: Enforce (the default) or Audit.
	ClusterSetBindings v1alpha2.ClusterSetBindingsMode `json:"clusterSetBindings"`
	Clusters           []target                        `json:"clusters"`
	// Notes say what could not be worked out, and why.
	Notes []string `json:"notes,omitempty"`

	// StatusOnly: the user may not list ManagedClusters, and the view is the AppConfig's status alone.
	StatusOnly bool `json:"statusOnly,omitempty"`
	// Lacks names the right a status-only view lacks.
	Lacks string `json:"lacks,omitempty"`
	// Summary is the status's counts, in a status-only view.
	Summary *v1alpha2.Summary `json:"summary,omitempty"`
	// MoreClusters counts, in a status-only view, the clusters delivered to that the status does not name.
	MoreClusters int32 `json:"moreClusters,omitempty"`
}

// target is one cluster.
type target struct {
	Cluster  string `json:"cluster"`
	Targeted bool   `json:"targeted"`
	// Reason says why the cluster is not targeted; for one targeted only because the hub audits its
	// bindings, why enforcing them would leave it out.
	Reason string `json:"reason,omitempty"`
	// Stage is the rollout stage that takes the cluster, when the AppConfig has a rollout.
	Stage string `json:"stage,omitempty"`
	// Revision is the hash of the revision the cluster's ManifestWork carries, "" for no work;
	// RevisionName the name of its ControllerRevision, when it is recorded and the user may read it.
	Revision     string `json:"revision,omitempty"`
	RevisionName string `json:"revisionName,omitempty"`
	// Overrides are the spec.overrides that select the cluster, in order.
	Overrides []string `json:"overrides,omitempty"`

	// Applied, Available and Health are, in a status-only view, what the AppConfig's status says of the
	// cluster's work.
	Applied   metav1.ConditionStatus `json:"applied,omitempty"`
	Available metav1.ConditionStatus `json:"available,omitempty"`
	Health    v1alpha2.Health        `json:"health,omitempty"`
}

// targetsOf works out the targets of the AppConfig name of namespace; only cluster's when it is set.
func targetsOf(ctx context.Context, clients *hubClients, namespace, name, cluster string) (*targets, error) {
	app, err := readAppConfig(ctx, clients, namespace, name)
	if err != nil {
		return nil, err
	}
	p := app.Spec.Placement
	r := &targets{AppConfig: key(app), Placement: placementKind(p), ClusterSetBindings: v1alpha2.ClusterSetBindingsEnforce, Clusters: []target{}}
	audit := false
	if s := app.Status.Placement; s != nil && s.ClusterSetBindings == v1alpha2.ClusterSetBindingsAudit {
		r.ClusterSetBindings, audit = v1alpha2.ClusterSetBindingsAudit, true
	}

	list, err := clients.clusters.ClusterV1().ManagedClusters().List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsForbidden(err):
		return fromStatus(r, app, cluster), nil
	case err != nil:
		return nil, fmt.Errorf("list ManagedClusters: %w", err)
	}
	managed := make([]*clusterv1.ManagedCluster, 0, len(list.Items))
	for i := range list.Items {
		managed = append(managed, &list.Items[i])
	}
	// The decisions both place (placement.DecidedBy) and group the clusters (for stages and overrides).
	var decisions []clusterv1beta1.PlacementDecision
	if p != nil && p.PlacementRef != nil {
		list, err := clients.clusters.ClusterV1beta1().PlacementDecisions(namespace).List(ctx, metav1.ListOptions{
			LabelSelector: labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: p.PlacementRef.Name}).String()})
		if err != nil {
			return nil, fmt.Errorf("list the PlacementDecisions of Placement %s/%s: %w", namespace, p.PlacementRef.Name, err)
		}
		decisions = list.Items
	}
	bound, err := boundSetsOf(ctx, clients, namespace)
	if err != nil {
		return nil, err
	}
	r.BoundSets = bound.Names
	if r.BoundSets == nil {
		r.BoundSets = []string{}
	}
	explained, err := placement.Explain(p, namespace, managed, decisions, bound, audit)
	if err != nil {
		return nil, fmt.Errorf("AppConfig %s: %w", key(app), err)
	}
	groups := placement.DecisionGroups(p, decisions)

	stages, note := stagesOf(app, explained, groups)
	if note != "" {
		r.Notes = append(r.Notes, note)
	}
	revisions, note, err := workRevisions(ctx, clients, app)
	if err != nil {
		return nil, err
	}
	if note != "" {
		r.Notes = append(r.Notes, note)
	}
	names := revisionNames(ctx, clients, app)
	for _, t := range explained {
		if (cluster == "" && !t.Placed) || (cluster != "" && t.Cluster != cluster) {
			continue
		}
		row := target{Cluster: t.Cluster, Targeted: t.Delivered, Reason: t.Reason, Stage: stages[t.Cluster]}
		row.Revision, row.RevisionName = revisions[t.Cluster], names[revisions[t.Cluster]]
		if row.Overrides, err = overridesOf(app, t, groups[t.Cluster]); err != nil {
			return nil, err
		}
		r.Clusters = append(r.Clusters, row)
	}
	if cluster != "" && len(r.Clusters) == 0 {
		// Neither a ManagedCluster nor named by the placement.
		r.Clusters = append(r.Clusters, target{Cluster: cluster, Reason: placement.ReasonNotMatched,
			Revision: revisions[cluster], RevisionName: names[revisions[cluster]]})
	}
	return r, nil
}

// placementKind names how p names clusters, by the precedence the hub gives its fields.
func placementKind(p *v1alpha2.Placement) string {
	switch {
	case !placement.Names(p):
		return "none"
	case len(p.Clusters) > 0:
		return "clusters"
	case p.ClusterSelector != nil:
		return "clusterSelector"
	}
	return "placementRef " + p.PlacementRef.Name
}

// boundSetsOf reads the ManagedClusterSetBindings of namespace and the sets of those that count, as
// ferry-hub does, and returns what they bind.
func boundSetsOf(ctx context.Context, clients *hubClients, namespace string) (placement.BoundSets, error) {
	bindings, err := clients.clusters.ClusterV1beta2().ManagedClusterSetBindings(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return placement.BoundSets{}, fmt.Errorf("list the ManagedClusterSetBindings of namespace %s: %w", namespace, err)
	}
	sets := map[string]*clusterv1beta2.ManagedClusterSet{}
	for i := range bindings.Items {
		b := &bindings.Items[i]
		if !placement.Binds(b) {
			continue
		}
		set, err := clients.clusters.ClusterV1beta2().ManagedClusterSets().Get(ctx, b.Spec.ClusterSet, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue // binds nothing
		case err != nil:
			return placement.BoundSets{}, fmt.Errorf("read ManagedClusterSet %s: %w", b.Spec.ClusterSet, err)
		}
		sets[set.Name] = set
	}
	return placement.Bind(bindings.Items, sets), nil
}

// stagesOf is the rollout stage of each targeted cluster, as the hub's rollout takes them: from the
// clusters the AppConfig is delivered to, by their labels and decision groups. A spec the rollout
// cannot read gives no stages and a note saying why.
func stagesOf(app *v1alpha2.ApplicationConfiguration, explained []placement.Target, groups map[string][]string) (map[string]string, string) {
	if app.Spec.Rollout == nil {
		return nil, ""
	}
	var clusters []rollout.Cluster
	for _, t := range explained {
		if t.Delivered {
			clusters = append(clusters, rollout.Cluster{Name: t.Cluster, Labels: t.ManagedCluster.Labels, Groups: groups[t.Cluster]})
		}
	}
	stages, err := rollout.Stages(*app.Spec.Rollout, clusters)
	if err != nil {
		return nil, fmt.Sprintf("no stages: spec.rollout: %v", err)
	}
	return stages, ""
}

// workRevisions are the revisions the AppConfig's ManifestWorks carry, by cluster. A user who may not
// list ManifestWorks gets none, and a note saying so.
func workRevisions(ctx context.Context, clients *hubClients, app *v1alpha2.ApplicationConfiguration) (map[string]string, string, error) {
	ofApp := labels.SelectorFromSet(labels.Set{v1alpha2.LabelAppConfigNamespace: app.Namespace, v1alpha2.LabelAppConfigName: app.Name}).String()
	works, err := clients.metadata.Resource(manifestWorks).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: ofApp})
	switch {
	case apierrors.IsForbidden(err):
		return nil, "no revisions: reading them needs list manifestworks.work.open-cluster-management.io in the cluster namespaces", nil
	case err != nil:
		return nil, "", fmt.Errorf("list the ManifestWorks of AppConfig %s: %w", key(app), err)
	}
	out := make(map[string]string, len(works.Items))
	for _, w := range works.Items {
		out[w.Namespace] = v1alpha2.WorkRevision(w.Annotations)
	}
	return out, "", nil
}

// revisionNames are the names of the AppConfig's recorded revisions (ControllerRevisions), by hash;
// none when the user may not list them, and the hashes are shown instead.
func revisionNames(ctx context.Context, clients *hubClients, app *v1alpha2.ApplicationConfiguration) map[string]string {
	revs, err := appRevisions(ctx, clients, app.Namespace, app.Name)
	if err != nil {
		return nil
	}
	out := make(map[string]string, len(revs))
	for _, rev := range revs {
		if hash := rev.Labels[apprevision.LabelHash]; hash != "" {
			out[hash] = rev.Name
		}
	}
	return out
}

// overridesOf names the spec.overrides that select t's cluster, in order, by the facts of its
// ManagedCluster (its name alone when it has none).
func overridesOf(app *v1alpha2.ApplicationConfiguration, t placement.Target, groups []string) ([]string, error) {
	facts := override.Cluster{Name: t.Cluster, DecisionGroups: groups}
	if t.ManagedCluster != nil {
		facts = override.ClusterOf(t.ManagedCluster, groups)
	}
	var out []string
	for i := range app.Spec.Overrides {
		o := &app.Spec.Overrides[i]
		selects, err := override.Selects(o, facts)
		if err != nil {
			return nil, fmt.Errorf("AppConfig %s: spec.overrides[%d]: %w", key(app), i, err)
		}
		if selects {
			out = append(out, o.Name)
		}
	}
	return out, nil
}

// fromStatus completes r from the AppConfig's status alone, for a user who may not list ManagedClusters:
// the clusters it is delivered to (status.placement, and how the clusters that are not fine fare), and
// those the bound sets refuse.
func fromStatus(r *targets, app *v1alpha2.ApplicationConfiguration, cluster string) *targets {
	r.StatusOnly, r.Lacks = true, listClustersRight
	view := statusview.ForAppConfigStatus(app)
	r.Summary, r.MoreClusters = view.Summary, view.MoreClusters
	var refused []string
	if s := app.Status.Placement; s != nil {
		refused = s.Refused
	}
	for _, w := range view.Clusters {
		t := target{Cluster: w.Cluster, Targeted: true, Applied: w.Applied, Available: w.Available, Health: w.Health}
		if slices.Contains(refused, w.Cluster) {
			t.Reason = placement.NotBound(app.Namespace) // delivered all the same: the bindings are audited
		}
		r.Clusters = append(r.Clusters, t)
	}
	for _, name := range refused {
		if !slices.ContainsFunc(r.Clusters, func(t target) bool { return t.Cluster == name }) {
			r.Clusters = append(r.Clusters, target{Cluster: name, Reason: placement.NotBound(app.Namespace)})
		}
	}
	slices.SortFunc(r.Clusters, func(a, b target) int { return strings.Compare(a.Cluster, b.Cluster) })
	if cluster != "" {
		r.Clusters = slices.DeleteFunc(r.Clusters, func(t target) bool { return t.Cluster != cluster })
	}
	return r
}

// write prints r as a table after a line saying how the AppConfig is placed, or as JSON or YAML.
func (r *targets) write(out io.Writer, format string) error {
	switch format {
	case statusview.FormatJSON:
		data, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", data)
		return err
	case statusview.FormatYAML:
		data, err := yaml.Marshal(r)
		if err != nil {
			return err
		}
		_, err = out.Write(data)
		return err
	}
	tw := tabwriter.NewWriter(out, 6, 4, 3, ' ', 0)
	if r.StatusOnly {
		fmt.Fprintf(tw, "AppConfig %s, from its status: you may not %s, which working out the placement needs.\n\n", r.AppConfig, r.Lacks)
		if s := r.Summary; s != nil {
			fmt.Fprintln(tw, "CLUSTERS\tAPPLIED\tAVAILABLE\tHEALTHY")
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n\n", s.Clusters, s.Applied, s.Available, dashIfEmpty(s.Healthy))
		}
		fmt.Fprintln(tw, "CLUSTER\tTARGETED\tAPPLIED\tAVAILABLE\tHEALTH")
		for _, t := range r.Clusters {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Cluster, targetedCell(t), dashIfEmpty(string(t.Applied)), dashIfEmpty(string(t.Available)), dashIfEmpty(string(t.Health)))
		}
		if r.MoreClusters > 0 {
			fmt.Fprintf(tw, "\n(and %d more clusters delivered to, which the status does not name)\n", r.MoreClusters)
		}
		return tw.Flush()
	}
	sets := "none"
	if len(r.BoundSets) > 0 {
		sets = strings.Join(r.BoundSets, ", ")
	}
	placed := "has no placement: it is delivered to no cluster"
	if r.Placement != "none" {
		placed = "is placed by spec.placement." + r.Placement
	}
	held := "enforced: the clusters outside them get no ManifestWork"
	if r.ClusterSetBindings == v1alpha2.ClusterSetBindingsAudit {
		held = "only audited: ferry-hub delivers to the clusters outside them all the same"
	}
	fmt.Fprintf(tw, "AppConfig %s %s.\nManagedClusterSets bound to namespace %s: %s (%s).\n\n", r.AppConfig, placed, r.namespace(), sets, held)
	fmt.Fprintln(tw, "CLUSTER\tTARGETED\tSTAGE\tREVISION\tOVERRIDES")
	for _, t := range r.Clusters {
		overrides := "-"
		if len(t.Overrides) > 0 {
			overrides = strings.Join(t.Overrides, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Cluster, targetedCell(t), dashIfEmpty(t.Stage), dashIfEmpty(cmp.Or(t.RevisionName, t.Revision)), overrides)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(tw, "\n%s\n", n)
	}
	return tw.Flush()
}

// namespace is the AppConfig's namespace.
func (r *targets) namespace() string {
	ns, _, _ := strings.Cut(r.AppConfig, "/")
	return ns
}

// targetedCell is yes or no, with the reason.
func targetedCell(t target) string {
	switch {
	case t.Targeted && t.Reason != "":
		return "yes (audited: " + t.Reason + ")"
	case t.Targeted:
		return "yes"
	}
	return "no (" + t.Reason + ")"
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
