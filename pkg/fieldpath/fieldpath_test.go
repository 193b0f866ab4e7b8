package fieldpath

import (
	"testing"
)

// Set writes through maps it creates and list elements that exist, and refuses a path it cannot follow.
func TestSet(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "a"}}}}
	for path, value := range map[string]any{
		"spec.containers[0].image":            "x",
		"metadata.labels[app.oam.dev/tier]":   "web",
		".spec.replicas":                      float64(2),
		"spec.template.metadata.labels[team]": "t",
	} {
		if err := Set(obj, path, value); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
	if obj["metadata"].(map[string]any)["labels"].(map[string]any)["app.oam.dev/tier"] != "web" {
		t.Errorf("bracketed key not set: %v", obj["metadata"])
	}
	for _, bad := range []string{"spec.containers[3].image", "spec.containers.image", "spec[0]", "spec.x[", ""} {
		if err := Set(obj, bad, "v"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
