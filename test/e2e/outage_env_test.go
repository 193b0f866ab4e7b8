package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// buildBinaries builds the named commands of cmd/ (ferry-hub from cmd/hub, ...) into a directory of
// the test.
func buildBinaries(t *testing.T, names ...string) string {
	t.Helper()
	bin := t.TempDir()
	for _, name := range names {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, name), "./cmd/"+name[len("ferry-"):])
		build.Dir = repoRoot(t)
		if out, err := build.CombinedOutput(); err != nil {
			t.Errorf("build %s: %v\n%s", name, err, out) // Errorf: it may run outside the test's goroutine
		}
	}
	return bin
}

// startProcess runs a binary with its output in logPath until the test ends, then stops it with
// SIGTERM as a supervisor would; it fails the test if the process exits before.
func startProcess(t *testing.T, path, logPath string, args ...string) {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	logf.Close()
	if err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case err := <-exited:
			t.Errorf("%s exited before the test ended: %v (log %s)", filepath.Base(path), err, logPath)
			return
		default:
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("%s did not stop within 15s of SIGTERM", filepath.Base(path))
		}
	})
}

func readRole(t *testing.T, path string) *rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return role
}

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
func logDir(t *testing.T) string {
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
