package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-mc/ferry/internal/testing/gobuild"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// "What will this change do on each cluster?", answered before it is done, through the real ferry-hub,
// ferry-agents and kubectl ferry: an application delivered with image A on both clusters is annotated
// ferry.io/report-only and its image changed to B. Each cluster's agent reports on its preview that the
// Deployment's .spec.template.spec.containers[0].image would go from A to B — in the AppConfig's
// status.diff and in `kubectl ferry diff appconfig` — while neither spoke's Deployment is written (its
// resourceVersion stays). Removing the annotation delivers B and deletes the previews.
func TestReportOnlyChangeIsPreviewedOnEveryClusterThenDelivered(t *testing.T) {
	t.Parallel() // brings clusters of its own: see doc.go
	hub, spokes, state := startLocal(t)
	root := repoRoot(t)
	hubKC := filepath.Join(state, "hub.kubeconfig")
	kubectl := func(stdin string, args ...string) string {
		t.Helper()
		out, err := kubectlRun(hubKC, "", stdin, args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	const imageA, imageB = "nginx:1.27.1", "nginx:1.27.2"
	kubectl(`
apiVersion: core.oam.dev/v1alpha2
kind: Component
metadata: {name: preview-web, namespace: default}
spec:
  workload:
    apiVersion: apps/v1
    kind: Deployment
    spec:
      replicas: 1
      selector: {matchLabels: {app: preview-web}}
      template:
        metadata: {labels: {app: preview-web}}
        spec: {containers: [{name: web, image: nginx:1.27}]}
  parameters:
  - {name: image, fieldPaths: ["spec.template.spec.containers[0].image"]}
---
apiVersion: core.oam.dev/v1alpha2
kind: ApplicationConfiguration
metadata: {name: preview-web, namespace: default}
spec:
  placement: {clusters: [cluster1, cluster2]}
  components:
  - componentName: preview-web
    parameterValues: [{name: image, value: `+imageA+`}]
`, "create", "-f", "-")

	image := func(s *cluster) (string, *unstructured.Unstructured) {
		d, err := s.get(t, deploymentGVK, "default", "preview-web")
		if err != nil {
			return "", nil
		}
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		if len(containers) == 0 {
			return "", d
		}
		img, _ := containers[0].(map[string]any)["image"].(string)
		return img, d
	}
	// Each spoke's Deployment once it runs A and its controller is done with it: its resourceVersion
	// changes no more unless someone writes it.
	versions := map[string]string{}
	for _, s := range spokes {
		eventually(t, s.name+": Deployment runs "+imageA, 2*time.Minute, func(context.Context) (bool, error) {
			img, d := image(s)
			if img != imageA {
				return false, nil
			}
			observed, _, _ := unstructured.NestedInt64(d.Object, "status", "observedGeneration")
			available, _, _ := unstructured.NestedInt64(d.Object, "status", "availableReplicas")
			versions[s.name] = d.GetResourceVersion()
			return observed == d.GetGeneration() && available == 1, nil
		})
	}
	eventually(t, "the AppConfig applied on both clusters", time.Minute, func(context.Context) (bool, error) {
		app, err := hub.get(t, appConfigGVK, "default", "preview-web")
		if err != nil {
			return false, nil
		}
		applied, _, _ := unstructured.NestedString(app.Object, "status", "summary", "applied")
		return applied == "2/2", nil
	})

	kubectl("", "annotate", "applicationconfiguration", "preview-web", "-n", "default", v1alpha2.AnnotationReportOnly+"=true")
	kubectl("", "patch", "applicationconfiguration", "preview-web", "-n", "default", "--type", "json", "-p",
		`[{"op":"replace","path":"/spec/components/0/parameterValues/0/value","value":"`+imageB+`"}]`)

	imageChange := v1alpha2.FieldDiff{Path: ".spec.template.spec.containers[0].image", Live: `"` + imageA + `"`, Want: `"` + imageB + `"`}
	var diff v1alpha2.DiffStatus
	eventually(t, "status.diff: both clusters reported on the previews of the new generation", 2*time.Minute, func(context.Context) (bool, error) {
		app, err := hub.get(t, appConfigGVK, "default", "preview-web")
		if err != nil {
			return false, nil
		}
		raw, ok, _ := unstructured.NestedMap(app.Object, "status", "diff")
		if !ok {
			return false, nil
		}
		data, _ := json.Marshal(raw)
		diff = v1alpha2.DiffStatus{}
		if err := json.Unmarshal(data, &diff); err != nil {
			return false, err
		}
		return diff.Generation == app.GetGeneration() && diff.Reported == 2, nil
	})
	if diff.Clusters != 2 || diff.Changing != 2 {
		t.Errorf("status.diff %+v, want 2 clusters reported, both changing", diff)
	}
	for _, c := range []string{"cluster1", "cluster2"} {
		found := false
		for _, o := range diff.Changes {
			if o.Cluster == c && o.Kind == "Deployment" && o.Name == "preview-web" {
				for _, f := range o.Fields {
					found = found || f == imageChange
				}
			}
		}
		if !found {
			t.Errorf("status.diff does not say that the image of the Deployment on %s would go from %s to %s: %+v", c, imageA, imageB, diff.Changes)
		}
	}

	bin := filepath.Join(t.TempDir(), "kubectl-ferry")
	if out, err := gobuild.Command(t.Context(), root, bin, "./cmd/kubectl-ferry").CombinedOutput(); err != nil {
		t.Fatalf("build kubectl-ferry: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--kubeconfig", hubKC, "diff", "appconfig", "preview-web", "-n", "default", "--wait", "--timeout", "1m").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl ferry diff appconfig: %v\n%s", err, out)
	}
	t.Logf("kubectl ferry diff appconfig preview-web:\n%s", out)
	for _, c := range []string{"cluster1", "cluster2"} {
		want := fmt.Sprintf("cluster %s:\n  Deployment default/preview-web:\n", c)
		if !strings.Contains(string(out), want) {
			t.Errorf("kubectl ferry diff appconfig does not say %q", want)
		}
	}
	if line := fmt.Sprintf("    %s: %s → %s\n", imageChange.Path, imageChange.Live, imageChange.Want); strings.Count(string(out), line) != 2 {
		t.Errorf("kubectl ferry diff appconfig does not say %q for both clusters", line)
	}
	for _, s := range spokes {
		img, d := image(s)
		if img != imageA || d.GetResourceVersion() != versions[s.name] {
			t.Errorf("%s: the Deployment was written while report only: image %s, resourceVersion %s (was %s)", s.name, img, d.GetResourceVersion(), versions[s.name])
		}
	}

	kubectl("", "annotate", "applicationconfiguration", "preview-web", "-n", "default", v1alpha2.AnnotationReportOnly+"-")
	for _, s := range spokes {
		eventually(t, s.name+": Deployment runs "+imageB+" once delivered", 2*time.Minute, func(context.Context) (bool, error) {
			img, _ := image(s)
			return img == imageB, nil
		})
	}
	eventually(t, "the previews deleted and status.diff gone", time.Minute, func(context.Context) (bool, error) {
		previews := kubectl("", "get", "manifestworks", "-A", "-l", v1alpha2.LabelPreviewOfName+"=preview-web", "-o", "name")
		app, err := hub.get(t, appConfigGVK, "default", "preview-web")
		if err != nil {
			return false, err
		}
		_, hasDiff, _ := unstructured.NestedMap(app.Object, "status", "diff")
		return strings.TrimSpace(previews) == "" && !hasDiff, nil
	})
}
