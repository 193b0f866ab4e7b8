package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/ferry-mc/ferry/internal/statusview"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// `kubectl ferry rollout` steers the progressive rollout of an AppConfig (spec.rollout) as `kubectl
// rollout` steers a Deployment's. The hub does the rolling out; these commands only read its status
// and write what the hub reads: spec.rollout.paused, and the annotations of rollout_types.go.

func newRolloutCommand(conn *connection) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "The progressive rollout of an ApplicationConfiguration (spec.rollout): status, pause, resume, approve, undo, history, diff",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newRolloutStatusCommand(conn), newRolloutPauseCommand(conn), newRolloutResumeCommand(conn),
		newRolloutApproveCommand(conn), newRolloutUndoCommand(conn), newRolloutHistoryCommand(conn), newRolloutDiffCommand(conn))
	return cmd
}

func newRolloutStatusCommand(conn *connection) *cobra.Command {
	var o outputOptions
	cmd := &cobra.Command{
		Use:   "status APPCONFIG [-n NAMESPACE]",
		Short: "Where the rollout stands: revision, stable revision, phase, stage, per stage its clusters, and the failed clusters",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.until = o.watch
			if err := o.validate(); err != nil {
				return err
			}
			ns, clients, err := conn.target()
			if err != nil {
				return err
			}
			return show(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, clients, rolloutView(clients, ns, args[0]))
		},
	}
	o.addRolloutFlags(cmd.Flags())
	return cmd
}

func rolloutView(clients *hubClients, namespace, name string) view {
	return view{
		what: fmt.Sprintf("the rollout of AppConfig %s/%s", namespace, name),
		goal: "complete",
		load: func(ctx context.Context) (statusview.View, error) {
			app, err := readAppConfig(ctx, clients, namespace, name)
			if err != nil {
				return nil, err
			}
			return statusview.ForRollout(app), nil
		},
		watches: []watched{{resource: applicationConfigs, namespace: namespace, fieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}},
		verdict: func(v statusview.View) (bool, []string, error) {
			return v.(statusview.Rollout).Verdict()
		},
	}
}

func newRolloutPauseCommand(conn *connection) *cobra.Command {
	return newRolloutChangeCommand(conn, &cobra.Command{
		Use:   "pause APPCONFIG [-n NAMESPACE]",
		Short: "Hold the rollout where it is (spec.rollout.paused): no further cluster receives the new revision",
	}, func(_ context.Context, _ *hubClients, app *v1alpha2.ApplicationConfiguration) (map[string]any, string, error) {
		if err := hasRollout(app, "pause"); err != nil {
			return nil, "", err
		}
		if app.Spec.Rollout.Paused {
			return nil, fmt.Sprintf("the rollout of AppConfig %s is already paused", key(app)), nil
		}
		return map[string]any{"spec": map[string]any{"rollout": map[string]any{"paused": true}}},
			fmt.Sprintf("paused the rollout of AppConfig %s", key(app)), nil
	})
}

func newRolloutResumeCommand(conn *connection) *cobra.Command {
	return newRolloutChangeCommand(conn, &cobra.Command{
		Use:   "resume APPCONFIG [-n NAMESPACE]",
		Short: "Let a paused rollout go on (spec.rollout.paused false), and lift a halt of the revision rolling out",
	}, func(_ context.Context, _ *hubClients, app *v1alpha2.ApplicationConfiguration) (map[string]any, string, error) {
		if err := hasRollout(app, "resume"); err != nil {
			return nil, "", err
		}
		patch, did := map[string]any{}, []string{}
		if app.Spec.Rollout.Paused {
			// Removed rather than set false: the same to the hub, and the spec reads as it did before
			// the pause.
			patch["spec"] = map[string]any{"rollout": map[string]any{"paused": nil}}
			did = append(did, "resumed the rollout of AppConfig "+key(app))
		}
		if s := app.Status.Rollout; s != nil && s.Revision != "" {
			switch s.Phase {
			case v1alpha2.RolloutHalted, v1alpha2.RolloutRollingBack, v1alpha2.RolloutRolledBack:
				patch["metadata"] = map[string]any{"annotations": map[string]any{v1alpha2.AnnotationRolloutResume: s.Revision}}
				did = append(did, fmt.Sprintf("lifted the halt (%s) of revision %s of AppConfig %s", s.Phase, s.Revision, key(app)))
			}
		}
		if len(patch) == 0 {
			return nil, fmt.Sprintf("the rollout of AppConfig %s is neither paused nor halted: nothing to resume", key(app)), nil
		}
		return patch, strings.Join(did, "; "), nil
	})
}

func newRolloutApproveCommand(conn *connection) *cobra.Command {
	var stage string
	cmd := newRolloutChangeCommand(conn, &cobra.Command{
		Use:   "approve APPCONFIG [--stage NAME] [-n NAMESPACE]",
		Short: "Approve a stage of the revision rolling out (default: the stage waiting for approval)",
	}, func(_ context.Context, _ *hubClients, app *v1alpha2.ApplicationConfiguration) (map[string]any, string, error) {
		if err := hasRollout(app, "approve"); err != nil {
			return nil, "", err
		}
		s := app.Status.Rollout
		if s == nil || s.Revision == "" {
			return nil, "", fmt.Errorf("the hub has not reported on the rollout of AppConfig %s yet: no revision to approve a stage of", key(app))
		}
		name := stage
		switch {
		case name == "" && (s.Phase != v1alpha2.RolloutWaitingForApproval || s.Stage == ""):
			return nil, "", fmt.Errorf("nothing waits for approval in the rollout of revision %s of AppConfig %s (phase %s); "+
				"to approve a later stage ahead, name it with --stage", s.Revision, key(app), s.Phase)
		case name == "":
			name = s.Stage
		default:
			// The stages of the spec, and the last one of the clusters no stage takes, as the status
			// names it.
			var names []string
			for _, st := range app.Spec.Rollout.Stages {
				names = append(names, st.Name)
			}
			for _, st := range s.Stages {
				if !slices.Contains(names, st.Name) {
					names = append(names, st.Name)
				}
			}
			if !slices.Contains(names, name) {
				return nil, "", fmt.Errorf("spec.rollout of AppConfig %s has no stage %q; its stages: %s", key(app), name, strings.Join(names, ", "))
			}
		}
		var approved []string
		if rev, stages, ok := strings.Cut(app.Annotations[v1alpha2.AnnotationRolloutApprovals], "="); ok && rev == s.Revision && stages != "" {
			approved = strings.Split(stages, ",")
		}
		if slices.Contains(approved, name) {
			return nil, fmt.Sprintf("stage %s of revision %s of AppConfig %s is already approved", name, s.Revision, key(app)), nil
		}
		approved = append(approved, name)
		return map[string]any{"metadata": map[string]any{"annotations": map[string]any{
				v1alpha2.AnnotationRolloutApprovals: s.Revision + "=" + strings.Join(approved, ","),
			}}},
			fmt.Sprintf("approved stage %s of revision %s of AppConfig %s", name, s.Revision, key(app)), nil
	})
	cmd.Flags().StringVar(&stage, "stage", "", "Approve the stage `NAME` of spec.rollout.stages. Default: the stage the rollout waits at for approval.")
	return cmd
}

func newRolloutUndoCommand(conn *connection) *cobra.Command {
	var toRevision int64
	cmd := newRolloutChangeCommand(conn, &cobra.Command{
		Use:   "undo APPCONFIG [--to-revision N] [-n NAMESPACE]",
		Short: "Roll out an earlier recorded revision (default: the stable one, else the one before) until the spec is next edited",
	}, func(ctx context.Context, clients *hubClients, app *v1alpha2.ApplicationConfiguration) (map[string]any, string, error) {
		if toRevision < 0 {
			return nil, "", fmt.Errorf("--to-revision %d: revisions are numbered from 1", toRevision)
		}
		revs, err := appRevisions(ctx, clients, app.Namespace, app.Name)
		if err != nil {
			return nil, "", err
		}
		target, err := undoTarget(app, revs, toRevision)
		if err != nil {
			return nil, "", err
		}
		if target.Name == currentRevision(app, revs) {
			return nil, fmt.Sprintf("revision %d (%s) is already the one AppConfig %s rolls out: nothing to undo", target.Revision, target.Name, key(app)), nil
		}
		return map[string]any{"metadata": map[string]any{"annotations": map[string]any{
				v1alpha2.AnnotationRolloutUndo: target.Name + "@" + strconv.FormatInt(app.Generation, 10),
			}}},
			fmt.Sprintf("rolling AppConfig %s back to revision %d (%s), until its spec is next edited", key(app), target.Revision, target.Name), nil
	})
	cmd.Flags().Int64Var(&toRevision, "to-revision", 0, "Roll out revision `N` (the REVISION column of kubectl ferry rollout history). Default: the stable revision while another one rolls out, else the one before the current one.")
	return cmd
}

// undoTarget is the revision of revs (oldest first) `rollout undo` rolls app back to: number
// toRevision, or, for 0, the stable revision while another one rolls out, else the highest-numbered
// one below the current one, as `kubectl rollout undo` goes back to the previous revision.
func undoTarget(app *v1alpha2.ApplicationConfiguration, revs []appsv1.ControllerRevision, toRevision int64) (*appsv1.ControllerRevision, error) {
	if len(revs) == 0 {
		return nil, fmt.Errorf("AppConfig %s has no recorded revisions to go back to", key(app))
	}
	byNumber := func(n int64) int {
		return slices.IndexFunc(revs, func(r appsv1.ControllerRevision) bool { return r.Revision == n })
	}
	byName := func(name string) int {
		return slices.IndexFunc(revs, func(r appsv1.ControllerRevision) bool { return r.Name == name })
	}
	if toRevision > 0 {
		i := byNumber(toRevision)
		if i < 0 {
			numbers := make([]string, len(revs))
			for j, r := range revs {
				numbers[j] = strconv.FormatInt(r.Revision, 10)
			}
			return nil, fmt.Errorf("AppConfig %s has no revision %d; its recorded revisions: %s (kubectl ferry rollout history)",
				key(app), toRevision, strings.Join(numbers, ", "))
		}
		return &revs[i], nil
	}
	if s := app.Status.Rollout; s != nil && s.StableRevision != "" && s.StableRevision != s.Revision {
		i := byName(s.StableRevision)
		if i < 0 {
			return nil, fmt.Errorf("the stable revision %s of AppConfig %s is no longer recorded; name one with --to-revision", s.StableRevision, key(app))
		}
		return &revs[i], nil
	}
	current := revs[len(revs)-1].Revision
	if i := byName(currentRevision(app, revs)); i >= 0 {
		current = revs[i].Revision
	}
	var before *appsv1.ControllerRevision
	for i := range revs {
		if revs[i].Revision < current {
			before = &revs[i]
		}
	}
	if before == nil {
		return nil, fmt.Errorf("AppConfig %s has no revision before revision %d to go back to", key(app), current)
	}
	return before, nil
}

// currentRevision is the name of the revision app rolls out: the rollout's, else that of an undo in
// force, else the latest recorded of revs (oldest first).
func currentRevision(app *v1alpha2.ApplicationConfiguration, revs []appsv1.ControllerRevision) string {
	if s := app.Status.Rollout; s != nil && s.Revision != "" {
		return s.Revision
	}
	if name, gen, ok := strings.Cut(app.Annotations[v1alpha2.AnnotationRolloutUndo], "@"); ok && gen == strconv.FormatInt(app.Generation, 10) {
		return name
	}
	if len(revs) == 0 {
		return ""
	}
	return revs[len(revs)-1].Name
}

func newRolloutHistoryCommand(conn *connection) *cobra.Command {
	var o outputOptions
	cmd := &cobra.Command{
		Use:   "history APPCONFIG [-n NAMESPACE]",
		Short: "The recorded revisions of the application, marking the one rolling out and the stable one",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			ns, clients, err := conn.target()
			if err != nil {
				return err
			}
			app, err := readAppConfig(cmd.Context(), clients, ns, args[0])
			if err != nil {
				return err
			}
			revs, err := appRevisions(cmd.Context(), clients, ns, args[0])
			if err != nil {
				return err
			}
			return statusview.Write(cmd.OutOrStdout(), o.format, statusview.ForRolloutHistory(app, revs))
		},
	}
	o.addFormatFlag(cmd.Flags())
	return cmd
}

// appRevisions are the recorded revisions of the AppConfig name of namespace (ControllerRevisions the
// appConfigAndRevisions reads the AppConfig name of namespace and its recorded revisions.
func appConfigAndRevisions(ctx context.Context, clients *hubClients, namespace, name string) (*v1alpha2.ApplicationConfiguration, []appsv1.ControllerRevision, error) {
	app, err := readAppConfig(ctx, clients, namespace, name)
	if err != nil {
		return nil, nil, err
	}
	revs, err := appRevisions(ctx, clients, namespace, name)
	return app, revs, err
}

// hub labels with it), oldest first.
func appRevisions(ctx context.Context, clients *hubClients, namespace, name string) ([]appsv1.ControllerRevision, error) {
	ofApp := labels.SelectorFromSet(labels.Set{v1alpha2.LabelAppConfigNamespace: namespace, v1alpha2.LabelAppConfigName: name}).String()
	list, err := clients.apps.ControllerRevisions(namespace).List(ctx, metav1.ListOptions{LabelSelector: ofApp})
	if err != nil {
		return nil, fmt.Errorf("list the revisions of AppConfig %s/%s: %w", namespace, name, err)
	}
	revs := list.Items
	slices.SortFunc(revs, func(x, y appsv1.ControllerRevision) int {
		return cmp.Or(cmp.Compare(x.Revision, y.Revision), cmp.Compare(x.Name, y.Name))
	})
	return revs, nil
}

// changeRollout decides, from the AppConfig as read, the JSON merge patch that changes it (nil: none)
// and the line that says what was done.
type changeRollout func(ctx context.Context, clients *hubClients, app *v1alpha2.ApplicationConfiguration) (patch map[string]any, done string, err error)

// newRolloutChangeCommand completes cmd into a command that changes the AppConfig its argument names
// as change decides, and prints what it did.
func newRolloutChangeCommand(conn *connection, cmd *cobra.Command, change changeRollout) *cobra.Command {
	cmd.Args = cobra.ExactArgs(1)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ns, clients, err := conn.target()
		if err != nil {
			return err
		}
		done, err := changeAppConfig(cmd.Context(), clients, ns, args[0], change)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(cmd.OutOrStdout(), done)
		return err
	}
	return cmd
}

// changeAppConfig reads the AppConfig, lets change decide, and writes its patch on the very version it
// decided from (metadata.resourceVersion in the patch): a change that decides from the status or from
// annotations must not overwrite what another writer did meanwhile. On a conflict it decides again.
func changeAppConfig(ctx context.Context, clients *hubClients, namespace, name string, change changeRollout) (string, error) {
	var done string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		app, err := readAppConfig(ctx, clients, namespace, name)
		if err != nil {
			return err
		}
		patch, did, err := change(ctx, clients, app)
		if err != nil || patch == nil {
			done = did
			return err
		}
		meta, _ := patch["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
			patch["metadata"] = meta
		}
		meta["resourceVersion"] = app.ResourceVersion
		data, err := json.Marshal(patch)
		if err != nil {
			return err
		}
		if _, err := clients.dynamic.Resource(applicationConfigs).Namespace(namespace).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("write ApplicationConfiguration %s/%s: %w", namespace, name, err)
		}
		done = did
		return nil
	})
	return done, err
}

// hasRollout fails, saying that there is nothing to do, unless app has a spec.rollout.
func hasRollout(app *v1alpha2.ApplicationConfiguration, verb string) error {
	if app.Spec.Rollout == nil {
		return fmt.Errorf("AppConfig %s has no spec.rollout: there is no rollout to %s (a new revision reaches every cluster at once)", key(app), verb)
	}
	return nil
}

// key is namespace/name of app, for messages.
func key(app *v1alpha2.ApplicationConfiguration) string { return app.Namespace + "/" + app.Name }
