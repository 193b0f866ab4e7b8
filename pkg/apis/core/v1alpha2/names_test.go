package v1alpha2_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// A preview's name is a valid ManifestWork name that is never the name of a work delivering an
// AppConfig — any AppConfig's, in any namespace — and tells apart AppConfigs whose names differ in a dot
// or a dash, or share the part of a long name that is kept.
func TestPreviewWorkNameIsNeverAWorksName(t *testing.T) {
	long := strings.Repeat("a", 250)
	seen := map[string]string{}
	for _, app := range [][2]string{
		{"default", "shop"}, {"default", "shop.eu"}, {"default", "shop-eu"}, {"default-shop", "eu"}, {"default", "preview-default-shop"},
		{strings.Repeat("n", 63), long}, {strings.Repeat("n", 63), long + "b"},
	} {
		name := v1alpha2.PreviewWorkName(app[0], app[1])
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Errorf("preview of %s/%s: %q is no valid ManifestWork name: %v", app[0], app[1], name, errs)
		}
		if strings.Contains(name, ".") {
			t.Errorf("preview of %s/%s: %q has a dot, as every name ManifestWorkName makes has", app[0], app[1], name)
		}
		if other, ok := seen[name]; ok {
			t.Errorf("preview of %s/%s and of %s share the name %q", app[0], app[1], other, name)
		}
		seen[name] = app[0] + "/" + app[1]
	}
	if got := v1alpha2.PreviewWorkName("default", "shop.eu"); !strings.HasPrefix(got, "preview-default-shop-eu-") {
		t.Errorf("preview of default/shop.eu is named %q: want it to start with preview-default-shop-eu-, for people to read", got)
	}
}
