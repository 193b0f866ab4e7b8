package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const outageApp = "outage-app"

// createApp creates an application on the hub placed on both clusters: a Component whose workload is
// a ConfigMap with a greeting parameter, and the AppConfig that sets it.
func (s *outageEnv) createApp(t *testing.T, greeting string) {
	t.Helper()
	comp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "core.oam.dev/v1alpha2", "kind": "Component",
		"metadata": map[string]any{"name": outageApp, "namespace": "default"},
		"spec": map[string]any{
			"workload": map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"data": map[string]any{"greeting": "none"},
			},
			"parameters": []any{map[string]any{"name": "greeting", "fieldPaths": []any{"data.greeting"}}},
		},
	}}
	app := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "core.oam.dev/v1alpha2", "kind": "ApplicationConfiguration",
		"metadata": map[string]any{"name": outageApp, "namespace": "default"},
		"spec": map[string]any{
			"placement": map[string]any{"clusters": []any{"cluster1", "cluster2"}},
			"components": []any{map[string]any{
				"componentName":   outageApp,
				"parameterValues": []any{map[string]any{"name": "greeting", "value": greeting}},
			}},
		},
	}}
	for _, obj := range []*unstructured.Unstructured{comp, app} {
		if _, err := s.hub.resource(t, obj.GroupVersionKind(), "default").Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
}

// updateApp sets the application's greeting.
func (s *outageEnv) updateApp(t *testing.T, greeting string) {
	t.Helper()
	eventually(t, "update the AppConfig", 30*time.Second, func(ctx context.Context) (bool, error) {
		app, err := s.hub.get(t, appConfigGVK, "default", outageApp)
		if err != nil {
			return false, nil
		}
		values := []any{map[string]any{"name": "greeting", "value": greeting}}
		components, _, _ := unstructured.NestedSlice(app.Object, "spec", "components")
		components[0].(map[string]any)["parameterValues"] = values
		if err := unstructured.SetNestedSlice(app.Object, components, "spec", "components"); err != nil {
			return false, err
		}
		_, err = s.hub.resource(t, appConfigGVK, "default").Update(ctx, app, metav1.UpdateOptions{})
		return err == nil, nil
	})
}

// waitAppDelivered waits until both spokes have the application's ConfigMap with the greeting.
func (s *outageEnv) waitAppDelivered(t *testing.T, greeting string, timeout time.Duration) {
	t.Helper()
	eventually(t, "application with greeting "+greeting+" on both spokes", timeout, func(ctx context.Context) (bool, error) {
		for _, kube := range s.spokes {
			cm, err := kube.CoreV1().ConfigMaps("default").Get(ctx, outageApp, metav1.GetOptions{})
			if err != nil || cm.Data["greeting"] != greeting {
				return false, nil
			}
		}
		return true, nil
	})
}

// logDir is where the processes of a test log: $FERRY_E2E_LOG_DIR/<test> if set, to read them after
// the run, else a directory removed with the test.
func logDir(t testing.TB) string {
	dir := os.Getenv("FERRY_E2E_LOG_DIR")
	if dir == "" {
		return t.TempDir()
	}
	dir = filepath.Join(dir, t.Name())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}
