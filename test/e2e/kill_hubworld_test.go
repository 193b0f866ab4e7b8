package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"golang.org/x/sync/errgroup"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	workv1client "open-cluster-management.io/api/client/work/clientset/versioned/typed/work/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

var appConfigGVR = schema.GroupVersionResource{Group: "core.oam.dev", Version: "v1alpha2", Resource: "applicationconfigurations"}

const (
	// killAppNamespace is the hub namespace of the hub test's Component and AppConfigs.
	killAppNamespace = "default"
	// killComponent is the Component every AppConfig of the hub test renders: a ConfigMap whose
	// data.value the AppConfig's parameter sets.
	killComponent = "kill-config"
)

// hubWorld is what the test asked of ferry-hub, and so what it must find on the hub after each round:
// exactly one ManifestWork per AppConfig and placed cluster, labelled for its AppConfig, carrying the
// current value and the UID it was first created with; no ManifestWork of a cluster an AppConfig left
// or of a deleted AppConfig.
type hubWorld struct {
	apps  dynamic.NamespaceableResourceInterface
	works workv1client.WorkV1Interface

	value  string
	placed map[string][]string // AppConfig → the clusters it is placed on
	uids   map[string]types.UID
}

func appName(i int) string { return fmt.Sprintf("app-%03d", i) }

func (w *hubWorld) plan(n int, clusters []string) {
	w.placed, w.uids = map[string][]string{}, map[string]types.UID{}
	for i := range n {
		w.placed[appName(i)] = clusters
	}
}

// spec is the AppConfig spec of app as the world wants it now.
func (w *hubWorld) spec(app string) map[string]any {
	clusters := make([]any, 0, len(w.placed[app]))
	for _, c := range w.placed[app] {
		clusters = append(clusters, c)
	}
	return map[string]any{
		"placement": map[string]any{"clusters": clusters},
		"components": []any{map[string]any{
			"componentName":   killComponent,
			"parameterValues": []any{map[string]any{"name": "value", "value": w.value}},
		}},
	}
}

func (w *hubWorld) appNames() []string {
	names := make([]string, 0, len(w.placed))
	for name := range w.placed {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// createAll creates every AppConfig of the plan.
func (w *hubWorld) createAll(ctx context.Context) error {
	return forEachName(ctx, w.appNames(), func(ctx context.Context, name string) error {
		obj := map[string]any{
			"apiVersion": "core.oam.dev/v1alpha2", "kind": "ApplicationConfiguration",
			"metadata": map[string]any{"name": name, "namespace": killAppNamespace},
			"spec":     w.spec(name),
		}
		data, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		// A server-side apply creates it; the hub owns nothing in the spec, so it never conflicts.
		if _, err := w.apps.Namespace(killAppNamespace).Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "kill-test"}); err != nil {
			return fmt.Errorf("create AppConfig %s: %w", name, err)
		}
		return nil
	})
}

// writeSpecs writes the wanted spec of each named AppConfig (a merge patch replaces the lists whole).
func (w *hubWorld) writeSpecs(ctx context.Context, names []string) error {
	return forEachName(ctx, names, func(ctx context.Context, name string) error {
		patch, err := json.Marshal(map[string]any{"spec": w.spec(name)})
		if err != nil {
			return err
		}
		if _, err := w.apps.Namespace(killAppNamespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("update AppConfig %s: %w", name, err)
		}
		return nil
	})
}

// setValue changes the parameter of every AppConfig and returns the change.
func (w *hubWorld) setValue(v string) func(context.Context) error {
	w.value = v
	names := w.appNames()
	return func(ctx context.Context) error { return w.writeSpecs(ctx, names) }
}

// narrowPlacement places the first n AppConfigs on only cluster and returns the change: their
// ManifestWorks on the other clusters must go, the one on cluster must stay as it is.
func (w *hubWorld) narrowPlacement(n int, cluster string) func(context.Context) error {
	names := w.appNames()[:n]
	for _, name := range names {
		for _, c := range w.placed[name] {
			if c != cluster {
				delete(w.uids, workKey(c, name))
			}
		}
		w.placed[name] = []string{cluster}
	}
	return func(ctx context.Context) error { return w.writeSpecs(ctx, names) }
}

// deleteAll deletes every AppConfig and returns the change.
func (w *hubWorld) deleteAll() func(context.Context) error {
	names := w.appNames()
	w.placed = map[string][]string{}
	return func(ctx context.Context) error {
		return forEachName(ctx, names, func(ctx context.Context, name string) error {
			if err := w.apps.Namespace(killAppNamespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete AppConfig %s: %w", name, err)
			}
			return nil
		})
	}
}

// workKey names the ManifestWork delivering app to cluster, as cluster/work.
func workKey(cluster, app string) string { return cluster + "/" + killAppNamespace + "." + app }

// recordUIDs remembers the UID of every wanted ManifestWork that has none recorded yet.
func (w *hubWorld) recordUIDs(ctx context.Context) error {
	list, err := w.works.ManifestWorks("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, mw := range list.Items {
		key := mw.Namespace + "/" + mw.Name
		if _, ok := w.uids[key]; !ok {
			w.uids[key] = mw.UID
		}
	}
	return nil
}

// check compares the hub with the world. problems may still resolve; violations cannot: a
// ManifestWork that should have stayed throughout has a new UID, so the hub deleted and created it
// again, which makes the agent delete and re-create the application's objects.
func (w *hubWorld) check(ctx context.Context) (problems, violations []string, err error) {
	wanted := map[string]string{} // cluster/work → its AppConfig
	for app, clusters := range w.placed {
		for _, c := range clusters {
			wanted[workKey(c, app)] = app
		}
	}
	list, err := w.works.ManifestWorks("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("list ManifestWorks: %w", err)
	}
	type placement struct{ cluster, app string }
	perApp := map[placement]int{} // works by cluster and the AppConfig their labels name
	found := map[string]bool{}
	for _, mw := range list.Items {
		key := mw.Namespace + "/" + mw.Name
		found[key] = true
		labelled := mw.Labels["ferry.io/appconfig-namespace"] + "/" + mw.Labels["ferry.io/appconfig-name"]
		perApp[placement{mw.Namespace, labelled}]++
		app, ok := wanted[key]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("ManifestWork %s (labelled for AppConfig %s) is left over: no AppConfig places it there", key, labelled))
			continue
		case labelled != killAppNamespace+"/"+app:
			problems = append(problems, fmt.Sprintf("ManifestWork %s is labelled for AppConfig %q, want %s/%s", key, labelled, killAppNamespace, app))
		case w.uids[key] != "" && mw.UID != w.uids[key]:
			violations = append(violations, fmt.Sprintf("ManifestWork %s was deleted and created again: UID %s, first created as %s", key, mw.UID, w.uids[key]))
		}
		if got := deliveredValue(mw.Spec.Workload.Manifests); got != w.value {
			problems = append(problems, fmt.Sprintf("ManifestWork %s delivers value %q, want %q", key, got, w.value))
		}
	}
	for key := range wanted {
		if !found[key] {
			problems = append(problems, fmt.Sprintf("ManifestWork %s is missing", key))
		}
	}
	for p, n := range perApp {
		if n > 1 {
			violations = append(violations, fmt.Sprintf("%d ManifestWorks in cluster namespace %s for AppConfig %s", n, p.cluster, p.app))
		}
	}
	apps, err := w.apps.Namespace(killAppNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("list AppConfigs: %w", err)
	}
	for _, app := range apps.Items {
		if _, ok := w.placed[app.GetName()]; !ok {
			problems = append(problems, fmt.Sprintf("AppConfig %s was deleted but is still on the hub (finalizers %v)", app.GetName(), app.GetFinalizers()))
		}
	}
	sort.Strings(problems)
	return problems, violations, nil
}

// deliveredValue is data.value of the first manifest (the rendered ConfigMap).
func deliveredValue(manifests []workv1.Manifest) string {
	if len(manifests) == 0 {
		return ""
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal(manifests[0].Raw, &cm); err != nil {
		return "undecodable: " + err.Error()
	}
	return cm.Data["value"]
}

// forEachName runs f for every name, a few at a time, and returns the first error.
func forEachName(ctx context.Context, names []string, f func(context.Context, string) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(hubWriters)
	for _, name := range names {
		g.Go(func() error { return f(ctx, name) })
	}
	return g.Wait()
}
