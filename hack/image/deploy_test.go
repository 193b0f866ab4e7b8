package main

import (
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// The kustomization of deploy/ that runs each command's image.
var deployDirs = map[string]string{
	"ferry-hub":   "deploy/hub",
	"ferry-agent": "deploy/agent/spoke",
}

// kustomization is the part of a kustomization.yaml that decides which image its Deployment runs.
type kustomization struct {
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
		Digest  string `json:"digest"`
	} `json:"images"`
}

// The images carry the tag deploy/ runs, so a loaded archive is what `kubectl apply -k` starts; this
// keeps deployTag and the kustomizations' newTag from drifting apart. Each Deployment must run
// ferry.io/<name> (so that the kustomization's images: entry applies to it), and that entry may set
// newTag only: a newName or digest would name an image no archive carries.
func TestDeployRunsTheTagTheImagesCarry(t *testing.T) {
	root := checkoutRoot(t)
	for _, c := range commands {
		t.Run(c.Name, func(t *testing.T) {
			dir, ok := deployDirs[c.Name]
			if !ok {
				t.Fatalf("no kustomization of deploy/ runs %s: add it to deployDirs", c.Name)
			}
			image := registry + "/" + c.Name
			if got := deploymentImage(t, filepath.Join(root, dir, "deployment.yaml"), c.Name); got != image {
				t.Errorf("%s/deployment.yaml runs %q, want %q (the images: entry sets the tag)", dir, got, image)
			}
			var k kustomization
			readYAML(t, filepath.Join(root, dir, "kustomization.yaml"), &k)
			var found int
			for _, entry := range k.Images {
				if entry.Name != image {
					continue
				}
				found++
				if entry.NewTag != deployTag {
					t.Errorf("%s/kustomization.yaml: %s newTag %q, but the images carry %q (deployTag in hack/image/image.go): change both together", dir, image, entry.NewTag, deployTag)
				}
				if entry.NewName != "" || entry.Digest != "" {
					t.Errorf("%s/kustomization.yaml: %s has newName %q digest %q, which no image of make images carries", dir, image, entry.NewName, entry.Digest)
				}
			}
			if found != 1 {
				t.Errorf("%s/kustomization.yaml has %d images: entries for %s, want 1 with newTag %q", dir, found, image, deployTag)
			}
		})
	}
}

// deploymentImage is the image of the container container of the Deployment in path.
func deploymentImage(t *testing.T, path, container string) string {
	t.Helper()
	var d appsv1.Deployment
	readYAML(t, path, &d)
	if d.Kind != "Deployment" {
		t.Fatalf("%s holds a %q, want the Deployment", path, d.Kind)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == container {
			return c.Image
		}
	}
	t.Fatalf("%s: no container %s", path, container)
	return ""
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
