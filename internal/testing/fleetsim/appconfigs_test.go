package fleetsim

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// Watching every namespace, the watcher sees AppConfigs of namespaces of their own, one for each, by
// name; one name in two namespaces is an error, not a history mixed of two AppConfigs.
func TestAppConfigWatcherOfEveryNamespace(t *testing.T) {
	env := shared.Get(t)
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{v1alpha2.AddToScheme, corev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.NewWithWatch(env.Hub.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	create := func(ns, name string) {
		t.Helper()
		if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		app := &v1alpha2.ApplicationConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1alpha2.ApplicationConfigurationSpec{Placement: &v1alpha2.Placement{ClusterSelector: Selector()},
				Components: []v1alpha2.ApplicationConfigurationComponent{{ComponentName: "web"}}},
		}
		if err := c.Create(t.Context(), app); err != nil {
			t.Fatal(err)
		}
	}
	create("every-0", "every-app-0")
	create("every-1", "every-app-1")
	watcher, err := NewAppConfigWatcher(c, metav1.NamespaceAll)
	if err != nil {
		t.Fatal(err)
	}
	if err := watcher.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, name := range watcher.Names() {
		if strings.HasPrefix(name, "every-") {
			ours = append(ours, name)
		}
	}
	if !slices.Equal(ours, []string{"every-app-0", "every-app-1"}) {
		t.Errorf("watcher sees %v, want every-app-0 and every-app-1", ours)
	}
	if err := watcher.Err(); err != nil {
		t.Fatal(err)
	}
	create("every-1", "every-app-0")
	eventually(t, 10*time.Second, "the watcher to report one name in two namespaces", func(context.Context) (bool, error) {
		err := watcher.Err()
		return err != nil && strings.Contains(err.Error(), "every-app-0") && strings.Contains(err.Error(), "every-1"), nil
	})
	if h := watcher.History("every-app-0"); len(h) != 1 {
		t.Errorf("every-app-0 has %d observations, want the first AppConfig's one only", len(h))
	}
}
