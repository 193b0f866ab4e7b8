package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	workv1client "open-cluster-management.io/api/client/work/clientset/versioned/typed/work/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

const (
	// killNamespace is the spoke namespace of the ConfigMaps the works of the agent test deliver.
	killNamespace = "kill"
	// killLabel marks those ConfigMaps, so that listing by it finds every one, wanted or left over.
	killLabel = "ferry.io/kill-test"
	// hubWriters bounds the test's own parallel writes to the hub.
	hubWriters = 16
)

// agentWorld is what the test asked of ferry-agent through the hub, and so what it must find on the
// spoke after each round: every ConfigMap a work holds exactly once, with the current value and the
// UID it was first created with; none of a removed manifest or a deleted work; one AppliedManifestWork
// per work recording exactly its objects.
type agentWorld struct {
	works workv1client.ManifestWorkInterface        // the spoke's namespace on the hub
	amws  workv1client.AppliedManifestWorkInterface // on the spoke
	spoke kubernetes.Interface

	value   string              // data.value of every ConfigMap
	held    map[string][]string // work → the ConfigMaps it holds
	removed map[string]bool     // ConfigMaps of manifests removed from their work, or of deleted works
	uids    map[string]types.UID
}

// workName and configMapName name the i-th work and its k-th ConfigMap.
func workName(i int) string                { return fmt.Sprintf("kill-%03d", i) }
func configMapName(i int, k string) string { return fmt.Sprintf("kill-%03d-%s", i, k) }

// plan sets up n works of one ConfigMap each, the first twoManifests of them with a second one.
func (w *agentWorld) plan(n, twoManifests int) {
	w.held, w.removed, w.uids = map[string][]string{}, map[string]bool{}, map[string]types.UID{}
	for i := range n {
		w.held[workName(i)] = []string{configMapName(i, "a")}
		if i < twoManifests {
			w.held[workName(i)] = append(w.held[workName(i)], configMapName(i, "b"))
		}
	}
}

// spec is the ManifestWork spec of work as the world wants it now.
func (w *agentWorld) spec(work string) (workv1.ManifestWorkSpec, error) {
	var spec workv1.ManifestWorkSpec
	for _, name := range w.held[work] {
		cm := &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: killNamespace, Labels: map[string]string{killLabel: "agent"}},
			Data:       map[string]string{"value": w.value},
		}
		raw, err := json.Marshal(cm)
		if err != nil {
			return spec, err
		}
		spec.Workload.Manifests = append(spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	return spec, nil
}

// createAll creates every work of the plan.
func (w *agentWorld) createAll(ctx context.Context) error {
	return forEachName(ctx, w.workNames(), func(ctx context.Context, name string) error {
		spec, err := w.spec(name)
		if err != nil {
			return err
		}
		mw := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
		if _, err := w.works.Create(ctx, mw, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create ManifestWork %s: %w", name, err)
		}
		return nil
	})
}

// writeSpecs writes the wanted spec of each named work; the agent writes status meanwhile, so a
// conflict reads the work again.
func (w *agentWorld) writeSpecs(ctx context.Context, names []string) error {
	return forEachName(ctx, names, func(ctx context.Context, name string) error {
		spec, err := w.spec(name)
		if err != nil {
			return err
		}
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			mw, err := w.works.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			mw.Spec = spec
			_, err = w.works.Update(ctx, mw, metav1.UpdateOptions{})
			if err != nil {
				return fmt.Errorf("update ManifestWork %s: %w", name, err)
			}
			return nil
		})
	})
}

// setValue changes the value every ConfigMap carries and returns the change: every work rewritten.
func (w *agentWorld) setValue(v string) func(context.Context) error {
	w.value = v
	names := w.workNames()
	return func(ctx context.Context) error { return w.writeSpecs(ctx, names) }
}

// removeSecondManifest takes the second manifest out of up to n works that still have one and returns
// the change.
func (w *agentWorld) removeSecondManifest(n int) func(context.Context) error {
	var names []string
	for _, name := range w.workNames() {
		if len(names) < n && len(w.held[name]) == 2 {
			w.removed[w.held[name][1]] = true
			w.held[name] = w.held[name][:1]
			names = append(names, name)
		}
	}
	return func(ctx context.Context) error { return w.writeSpecs(ctx, names) }
}

// deleteWorks deletes up to n works and returns the change.
func (w *agentWorld) deleteWorks(n int) func(context.Context) error {
	names := w.workNames()
	names = names[:min(n, len(names))]
	for _, name := range names {
		for _, cm := range w.held[name] {
			w.removed[cm] = true
		}
		delete(w.held, name)
	}
	return func(ctx context.Context) error {
		return forEachName(ctx, names, func(ctx context.Context, name string) error {
			if err := w.works.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete ManifestWork %s: %w", name, err)
			}
			return nil
		})
	}
}

func (w *agentWorld) workNames() []string {
	names := make([]string, 0, len(w.held))
	for name := range w.held {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// wantedConfigMaps is every ConfigMap some work holds.
func (w *agentWorld) wantedConfigMaps() map[string]bool {
	out := map[string]bool{}
	for _, cms := range w.held {
		for _, cm := range cms {
			out[cm] = true
		}
	}
	return out
}

// recordUIDs remembers the UID of every wanted ConfigMap that has none recorded yet.
func (w *agentWorld) recordUIDs(ctx context.Context) error {
	list, err := w.spoke.CoreV1().ConfigMaps(killNamespace).List(ctx, metav1.ListOptions{LabelSelector: killLabel})
	if err != nil {
		return err
	}
	for _, cm := range list.Items {
		if _, ok := w.uids[cm.Name]; !ok {
			w.uids[cm.Name] = cm.UID
		}
	}
	return nil
}

// check compares the hub and the spoke with the world. problems may still resolve; violations cannot:
// a ConfigMap that should have been kept throughout has a new UID, so the agent deleted it (or let it
// be deleted) and created it again.
func (w *agentWorld) check(ctx context.Context) (problems, violations []string, err error) {
	works, err := w.works.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("list ManifestWorks: %w", err)
	}
	onHub := map[string]bool{}
	for _, mw := range works.Items {
		onHub[mw.Name] = true
		cms, wanted := w.held[mw.Name]
		if !wanted {
			problems = append(problems, fmt.Sprintf("ManifestWork %s was deleted but is still on the hub (finalizers %v)", mw.Name, mw.Finalizers))
			continue
		}
		problems = append(problems, workStatusProblems(&mw, len(cms))...)
	}
	for name := range w.held {
		if !onHub[name] {
			violations = append(violations, fmt.Sprintf("ManifestWork %s is gone from the hub, though the test never deleted it", name))
		}
	}

	// Every namespace: an object applied anywhere but where its manifest says is a duplicate.
	cms, err := w.spoke.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: killLabel})
	if err != nil {
		return nil, nil, fmt.Errorf("list ConfigMaps: %w", err)
	}
	wanted := w.wantedConfigMaps()
	found := map[string]int{}
	for _, cm := range cms.Items {
		found[cm.Name]++
		switch {
		case cm.Namespace != killNamespace:
			violations = append(violations, fmt.Sprintf("ConfigMap %s/%s is in a namespace no manifest names", cm.Namespace, cm.Name))
		case !wanted[cm.Name]:
			problems = append(problems, fmt.Sprintf("ConfigMap %s is still on the spoke though its manifest or work was removed (deleting: %t)", cm.Name, cm.DeletionTimestamp != nil))
		case w.uids[cm.Name] != "" && cm.UID != w.uids[cm.Name]:
			violations = append(violations, fmt.Sprintf("ConfigMap %s was deleted and created again: UID %s, first applied as %s", cm.Name, cm.UID, w.uids[cm.Name]))
		case cm.Data["value"] != w.value:
			problems = append(problems, fmt.Sprintf("ConfigMap %s has value %q, want %q", cm.Name, cm.Data["value"], w.value))
		}
	}
	for name := range wanted {
		switch {
		case found[name] == 0:
			problems = append(problems, fmt.Sprintf("ConfigMap %s is missing on the spoke", name))
		case found[name] > 1:
			violations = append(violations, fmt.Sprintf("ConfigMap %s is on the spoke %d times", name, found[name]))
		}
	}

	amws, err := w.amws.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("list AppliedManifestWorks: %w", err)
	}
	recorded := map[string]int{}
	for _, amw := range amws.Items {
		work := amw.Spec.ManifestWorkName
		recorded[work]++
		held, wanted := w.held[work]
		if !wanted {
			problems = append(problems, fmt.Sprintf("AppliedManifestWork %s of deleted work %s is still on the spoke", amw.Name, work))
			continue
		}
		var names []string
		for _, r := range amw.Status.AppliedResources {
			names = append(names, r.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, held) {
			problems = append(problems, fmt.Sprintf("AppliedManifestWork %s records %v, want %v", amw.Name, names, held))
		}
	}
	for work := range w.held {
		if recorded[work] != 1 {
			problems = append(problems, fmt.Sprintf("work %s has %d AppliedManifestWorks on the spoke, want 1", work, recorded[work]))
		}
	}
	sort.Strings(problems)
	return problems, violations, nil
}

// workStatusProblems says how a work's status falls short of every one of its n manifests applied at
// its current generation.
func workStatusProblems(mw *workv1.ManifestWork, n int) []string {
	applied := meta.FindStatusCondition(mw.Status.Conditions, workv1.WorkApplied)
	if applied == nil || applied.Status != metav1.ConditionTrue || applied.ObservedGeneration != mw.Generation {
		return []string{fmt.Sprintf("ManifestWork %s: Applied is %s, want True at generation %d", mw.Name, describeCondition(applied), mw.Generation)}
	}
	if got := len(mw.Status.ResourceStatus.Manifests); got != n {
		return []string{fmt.Sprintf("ManifestWork %s: status lists %d manifests, want %d", mw.Name, got, n)}
	}
	var out []string
	for _, m := range mw.Status.ResourceStatus.Manifests {
		if c := meta.FindStatusCondition(m.Conditions, workv1.ManifestApplied); c == nil || c.Status != metav1.ConditionTrue {
			out = append(out, fmt.Sprintf("ManifestWork %s: manifest %s: Applied is %s", mw.Name, m.ResourceMeta.Name, describeCondition(c)))
		}
	}
	return out
}

func describeCondition(c *metav1.Condition) string {
	if c == nil {
		return "not set"
	}
	return strings.Join([]string{string(c.Status), c.Reason, fmt.Sprintf("generation %d", c.ObservedGeneration), c.Message}, " / ")
}
