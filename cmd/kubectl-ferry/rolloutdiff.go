package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/apprevision"
	"github.com/ferry-mc/ferry/pkg/override"
)

// `kubectl ferry rollout diff` answers, before a revision is approved, resumed or undone to, what it
// changes: the revisions are the hub's own records (ControllerRevisions, package apprevision), so the
// diff is of what the hub delivers, not of the AppConfig's spec.

func newRolloutDiffCommand(conn *connection) *cobra.Command {
	var from, to int64
	var cluster string
	cmd := &cobra.Command{
		Use:   "diff APPCONFIG [--from REV] [--to REV] [--cluster CLUSTER] [-n NAMESPACE]",
		Short: "What a revision changes against another, object by object: manifests, the rest of the work spec, overrides",
		Long: "Prints what revision TO of the AppConfig changes against revision FROM. Each manifest, known by its\n" +
			"apiVersion, kind, namespace and name, is added, removed or changed, with a unified diff of its YAML; the\n" +
			"unchanged ones are counted. Then the changes of the rest of the ManifestWork spec (executor,\n" +
			"manifestConfigs, deleteOption) and of the overrides, entry by entry.\n" +
			"With --cluster, both revisions as CLUSTER gets them (as kubectl ferry render appconfig prints them), and\n" +
			"the overrides that select it in each; a revision that cannot be rendered for CLUSTER (an override reads\n" +
			"a fact the cluster lacks, say) is named with the override and why, in place of its objects.\n" +
			"REV is a number of the REVISION column of kubectl ferry rollout history. --to defaults to the current\n" +
			"revision: the one rolling out (or undone to), else the latest. --from defaults to the stable revision\n" +
			"while TO rolls out and is not stable yet (what the rollout changes for the clusters it has not reached\n" +
			"yet), else to the revision before TO.\n" +
			"Exits 0 whether or not the revisions differ, and prints \"no difference\" when they do not.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from < 0 || to < 0 {
				return fmt.Errorf("--from %d --to %d: revisions are numbered from 1", from, to)
			}
			ns, clients, err := conn.target()
			if err != nil {
				return err
			}
			d, err := diffRevisions(cmd.Context(), clients, ns, args[0], from, to, cluster)
			if err != nil {
				return err
			}
			return d.write(cmd.OutOrStdout())
		},
	}
	cmd.Flags().Int64Var(&from, "from", 0, "Compare against revision `REV`. Default: the stable revision while TO rolls out, else the one before TO.")
	cmd.Flags().Int64Var(&to, "to", 0, "Show what revision `REV` changes. Default: the current revision (rolling out, else the latest).")
	cmd.Flags().StringVar(&cluster, "cluster", "", "Compare what the managed `CLUSTER` gets of each revision, its overrides applied.")
	return cmd
}

// diffPair is the revisions a diff compares, picked from revs (oldest first): numbers from and to, 0
// meaning the defaults of the help.
func diffPair(app *v1alpha2.ApplicationConfiguration, revs []appsv1.ControllerRevision, from, to int64) (*appsv1.ControllerRevision, *appsv1.ControllerRevision, error) {
	if len(revs) == 0 {
		return nil, nil, fmt.Errorf("AppConfig %s has no recorded revision yet (is ferry-hub running, and is the AppConfig Ready?)", key(app))
	}
	byNumber := func(n int64, flag string) (*appsv1.ControllerRevision, error) {
		i := slices.IndexFunc(revs, func(r appsv1.ControllerRevision) bool { return r.Revision == n })
		if i < 0 {
			numbers := make([]string, len(revs))
			for j, r := range revs {
				numbers[j] = strconv.FormatInt(r.Revision, 10)
			}
			return nil, fmt.Errorf("%s %d: AppConfig %s has no revision %d; its recorded revisions: %s (kubectl ferry rollout history)",
				flag, n, key(app), n, strings.Join(numbers, ", "))
		}
		return &revs[i], nil
	}
	byName := func(name string) *appsv1.ControllerRevision {
		i := slices.IndexFunc(revs, func(r appsv1.ControllerRevision) bool { return r.Name == name })
		if i < 0 {
			return nil
		}
		return &revs[i]
	}

	var toRev *appsv1.ControllerRevision
	if to > 0 {
		var err error
		if toRev, err = byNumber(to, "--to"); err != nil {
			return nil, nil, err
		}
	} else if toRev = byName(currentRevision(app, revs)); toRev == nil {
		// The revision rolling out is pruned or not recorded yet: the latest is what the hub has.
		toRev = &revs[len(revs)-1]
	}
	if from > 0 {
		fromRev, err := byNumber(from, "--from")
		return fromRev, toRev, err
	}
	// While TO rolls out, the clusters it has not reached run the stable revision, not the one before
	// TO: an undone or rolled-back revision may lie between them.
	if s := app.Status.Rollout; s != nil && s.Revision == toRev.Name && s.StableRevision != "" && s.StableRevision != s.Revision {
		stable := byName(s.StableRevision)
		if stable == nil {
			return nil, nil, fmt.Errorf("the stable revision %s of AppConfig %s is no longer recorded; name the revision to compare with --from", s.StableRevision, key(app))
		}
		return stable, toRev, nil
	}
	var before *appsv1.ControllerRevision
	for i := range revs {
		if revs[i].Revision < toRev.Revision {
			before = &revs[i]
		}
	}
	if before == nil && len(revs) == 1 {
		return nil, nil, fmt.Errorf("AppConfig %s has one recorded revision only, %d (%s): nothing to compare it with", key(app), toRev.Revision, toRev.Name)
	}
	if before == nil {
		return nil, nil, fmt.Errorf("AppConfig %s has no revision before revision %d (%s) to compare it with; name one with --from", key(app), toRev.Revision, toRev.Name)
	}
	return before, toRev, nil
}

// revisionDiff is what rollout diff prints: what revision to changes against revision from, for every
// cluster or for one.
type revisionDiff struct {
	app      *v1alpha2.ApplicationConfiguration
	from, to *appsv1.ControllerRevision
	cluster  string

	objects   []difference
	unchanged int
	spec      []difference
	// overrides by name, without a cluster; reordered, when only their order changed, is the names in
	// from's order and in to's.
	overrides []difference
	reordered [2][]string
	// With a cluster: why each revision cannot be rendered for it (then its objects are not compared),
	// and the overrides that select it.
	renderErr [2]error
	selecting [2][]string
}

// difference is one thing added, removed or changed, and the unified diff of its YAML.
type difference struct {
	what string // added, removed, changed
	name string
	diff string
}

// diffRevisions reads the AppConfig name of namespace and its revisions and compares the two that from
// and to pick (diffPair), for cluster when it is not empty.
func diffRevisions(ctx context.Context, clients *hubClients, namespace, name string, from, to int64, cluster string) (*revisionDiff, error) {
	app, revs, err := appConfigAndRevisions(ctx, clients, namespace, name)
	if err != nil {
		return nil, err
	}
	fromRev, toRev, err := diffPair(app, revs, from, to)
	if err != nil {
		return nil, err
	}
	var data [2]*apprevision.Data
	for i, rev := range []*appsv1.ControllerRevision{fromRev, toRev} {
		if data[i], err = apprevision.Decode(rev); err != nil {
			return nil, err
		}
	}
	d := &revisionDiff{app: app, from: fromRev, to: toRev, cluster: cluster}
	labels := [2]string{revisionLabel(fromRev), revisionLabel(toRev)}
	d.spec = compareItems(specItems(&data[0].Spec), specItems(&data[1].Spec), labels, nil)

	if cluster == "" {
		d.objects = compareItems(manifestItems(data[0].Spec.Workload.Manifests), manifestItems(data[1].Spec.Workload.Manifests), labels, &d.unchanged)
		d.overrides = compareItems(overrideItems(data[0].Overrides), overrideItems(data[1].Overrides), labels, nil)
		if len(d.overrides) == 0 {
			names := [2][]string{overrideNames(data[0].Overrides), overrideNames(data[1].Overrides)}
			if !slices.Equal(names[0], names[1]) {
				d.reordered = names
			}
		}
		return d, nil
	}

	facts := override.Cluster{Name: cluster}
	if all := append(slices.Clone(data[0].Overrides), data[1].Overrides...); len(all) > 0 {
		if facts, err = clusterFacts(ctx, clients, app, cluster, all); err != nil {
			return nil, err
		}
	}
	var specs [2]workv1.ManifestWorkSpec
	for i := range data {
		d.selecting[i] = selecting(data[i].Overrides, facts)
		specs[i], _, d.renderErr[i] = specFor(data[i], facts)
	}
	if d.renderErr[0] == nil && d.renderErr[1] == nil {
		// The cluster's own specs: overrides of components change its manifestConfigs too.
		d.spec = compareItems(specItems(&specs[0]), specItems(&specs[1]), labels, nil)
		d.objects = compareItems(manifestItems(specs[0].Workload.Manifests), manifestItems(specs[1].Workload.Manifests), labels, &d.unchanged)
	}
	return d, nil
}

// selecting names the overrides that select the cluster with facts, in order; one whose selection
// cannot be told is named so (rendering it says why).
func selecting(overrides []v1alpha2.Override, facts override.Cluster) []string {
	var names []string
	for i := range overrides {
		selected, err := override.Selects(&overrides[i], facts)
		switch {
		case err != nil:
			names = append(names, overrides[i].Name+" (cannot tell)")
		case selected:
			names = append(names, overrides[i].Name)
		}
	}
	return names
}

// item is one thing a revision holds, by name, as YAML.
type item struct{ name, yaml string }

// compareItems is what to changes against from: in to's order what it adds or changes, then what it
// removes in from's order. unchanged, when not nil, counts the items the same in both.
func compareItems(from, to []item, labels [2]string, unchanged *int) []difference {
	before := make(map[string]string, len(from))
	for _, it := range from {
		before[it.name] = it.yaml
	}
	after := make(map[string]bool, len(to))
	var out []difference
	for _, it := range to {
		after[it.name] = true
		was, ok := before[it.name]
		switch {
		case !ok:
			out = append(out, difference{"added", it.name, unifiedDiff("", it.yaml, labels)})
		case was != it.yaml:
			out = append(out, difference{"changed", it.name, unifiedDiff(was, it.yaml, labels)})
		case unchanged != nil:
			*unchanged++
		}
	}
	for _, it := range from {
		if !after[it.name] {
			out = append(out, difference{"removed", it.name, unifiedDiff(it.yaml, "", labels)})
		}
	}
	return out
}

// unifiedDiff is the unified diff of the lines of a and b, with three lines of context.
func unifiedDiff(a, b string, labels [2]string) string {
	lines := func(s string) []string {
		if s == "" {
			return nil // an added or removed thing: all of it on one side
		}
		return difflib.SplitLines(strings.TrimSuffix(s, "\n"))
	}
	diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: lines(a), B: lines(b), FromFile: labels[0], ToFile: labels[1], Context: 3})
	if err != nil {
		// It writes to a strings.Builder, which does not fail.
		return fmt.Sprintf("(no diff: %v)\n", err)
	}
	return diff
}

// manifestItems are manifests by identity: apiVersion, kind, namespace/name. A manifest that repeats
// an identity is named by its position too, so that neither hides the other.
func manifestItems(manifests []workv1.Manifest) []item {
	items := make([]item, 0, len(manifests))
	seen := map[string]bool{}
	for i, m := range manifests {
		var obj map[string]any
		if err := json.Unmarshal(m.Raw, &obj); err != nil {
			// Not an object: the hub does not record one, but say what there is rather than fail.
			items = append(items, item{fmt.Sprintf("manifest %d (not a JSON object)", i+1), string(m.Raw) + "\n"})
			continue
		}
		meta, _ := obj["metadata"].(map[string]any)
		apiVersion, _ := obj["apiVersion"].(string)
		kind, _ := obj["kind"].(string)
		name, _ := meta["name"].(string)
		if ns, _ := meta["namespace"].(string); ns != "" {
			name = ns + "/" + name
		}
		id := apiVersion + " " + kind + " " + name
		if seen[id] {
			id += fmt.Sprintf(" (manifest %d)", i+1)
		}
		seen[id] = true
		items = append(items, item{id, toYAML(obj)})
	}
	return items
}

// specItems are the fields of spec other than its manifests (executor, manifestConfigs, deleteOption,
// and any the ManifestWork API adds), as spec.FIELD.
func specItems(spec *workv1.ManifestWorkSpec) []item {
	rest := spec.DeepCopy()
	rest.Workload = workv1.ManifestsTemplate{}
	var fields map[string]any
	raw, err := json.Marshal(rest)
	if err == nil {
		err = json.Unmarshal(raw, &fields)
	}
	if err != nil {
		return []item{{"spec", fmt.Sprintf("(cannot be read: %v)\n", err)}}
	}
	delete(fields, "workload") // the manifests, compared object by object
	var items []item
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		items = append(items, item{"spec." + k, toYAML(fields[k])})
	}
	return items
}

// overrideItems are the entries of overrides by name.
func overrideItems(overrides []v1alpha2.Override) []item {
	items := make([]item, len(overrides))
	for i, o := range overrides {
		items[i] = item{"override " + o.Name, toYAML(o)}
	}
	return items
}

func overrideNames(overrides []v1alpha2.Override) []string {
	names := make([]string, len(overrides))
	for i, o := range overrides {
		names[i] = o.Name
	}
	return names
}

// toYAML is v as YAML, its keys sorted.
func toYAML(v any) string {
	out, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Sprintf("(cannot be written as YAML: %v)\n", err)
	}
	return string(out)
}

// revisionLabel names rev as history does: its number, then its name.
func revisionLabel(rev *appsv1.ControllerRevision) string {
	return fmt.Sprintf("revision %d (%s)", rev.Revision, rev.Name)
}

// write prints d: a line naming the revisions, each difference with its diff, the count of unchanged
// objects, and with a cluster the overrides that select it; "no difference" when there is none.
func (d *revisionDiff) write(out io.Writer) error {
	var b strings.Builder
	labels := [2]string{revisionLabel(d.from), revisionLabel(d.to)}
	fmt.Fprintf(&b, "AppConfig %s: %s to %s", key(d.app), labels[0], labels[1])
	if d.cluster != "" {
		fmt.Fprintf(&b, " for cluster %s", d.cluster)
	}
	b.WriteString("\n")
	differs := false
	for i, err := range d.renderErr {
		if err != nil {
			differs = true
			fmt.Fprintf(&b, "%s cannot be rendered for cluster %s (ferry-hub delivers it nothing): %v\n", labels[i], d.cluster, err)
		}
	}
	differences := func(list []difference) {
		for _, x := range list {
			differs = true
			fmt.Fprintf(&b, "%s %s\n%s", x.what, x.name, x.diff)
		}
	}
	differences(d.objects)
	if d.unchanged > 0 {
		fmt.Fprintf(&b, "%d %s unchanged\n", d.unchanged, plural(d.unchanged, "object", "objects"))
	}
	differences(d.spec)
	differences(d.overrides)
	if d.reordered[0] != nil || d.reordered[1] != nil {
		differs = true
		fmt.Fprintf(&b, "overrides reordered (they apply in order): %s in %s; %s in %s\n",
			strings.Join(d.reordered[0], ", "), labels[0], strings.Join(d.reordered[1], ", "), labels[1])
	}
	if d.cluster != "" {
		fmt.Fprintf(&b, "overrides that select cluster %s:\n", d.cluster)
		for i, names := range d.selecting {
			list := "none"
			if len(names) > 0 {
				list = strings.Join(names, ", ")
			}
			fmt.Fprintf(&b, "  %s: %s\n", labels[i], list)
		}
	}
	if !differs {
		b.WriteString("no difference\n")
	}
	_, err := io.WriteString(out, b.String())
	return err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
