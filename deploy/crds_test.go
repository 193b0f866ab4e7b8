package deploy

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/ferry-mc/ferry/manifests"
)

// crdCopies maps each directory of manifests/ to its copy in deploy/, as deploy/sync-crds.sh writes it.
var crdCopies = map[string]string{
	"../manifests/oam":       "hub/crds/oam",
	"../manifests/ocm/hub":   "hub/crds/ocm",
	"../manifests/ocm/spoke": "agent/spoke/crds",
}

// The CRDs in deploy/ are byte-for-byte those of manifests/, the one source of truth that the tests
// and the local environment install: a CRD regenerated without `make manifests` fails here.
func TestCRDCopiesMatchManifests(t *testing.T) {
	for src, dst := range crdCopies {
		want := yamlFiles(t, src)
		got := yamlFiles(t, dst)
		delete(got, "kustomization.yaml")
		for name, data := range want {
			copied, ok := got[name]
			switch {
			case !ok:
				t.Errorf("%s/%s has no copy in deploy/%s: run deploy/sync-crds.sh (make manifests)", src, name, dst)
			case !bytes.Equal(copied, data):
				t.Errorf("deploy/%s/%s differs from %s/%s: run deploy/sync-crds.sh (make manifests)", dst, name, src, name)
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("deploy/%s/%s has no source in %s: run deploy/sync-crds.sh (make manifests)", dst, name, src)
			}
		}
	}
}

// deploy/hub installs exactly the CRDs a hub serves and deploy/agent/spoke (and the cloudevents
// overlays of it) exactly those a spoke serves, as manifests.HubCRDs and manifests.SpokeCRDs name them.
func TestInstallsCarryTheirCRDs(t *testing.T) {
	hub, err := manifests.HubCRDs()
	if err != nil {
		t.Fatal(err)
	}
	spoke, err := manifests.SpokeCRDs()
	if err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string][]*apiextensionsv1.CustomResourceDefinition{
		"hub": hub, "agent/spoke": spoke, "agent/cloudevents/grpc": spoke, "agent/cloudevents/mqtt": spoke,
	} {
		_, objs := render(t, dir)
		var got, wantNames []string
		for _, o := range objs {
			if o.GetKind() == "CustomResourceDefinition" {
				got = append(got, o.GetName())
			}
		}
		for _, crd := range want {
			wantNames = append(wantNames, crd.Name)
		}
		slices.Sort(got)
		slices.Sort(wantNames)
		if !slices.Equal(got, wantNames) {
			t.Errorf("deploy/%s installs the CRDs %v, want %v", dir, got, wantNames)
		}
	}
}

func yamlFiles(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no YAML files in %s", dir)
	}
	files := map[string][]byte{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(p)] = data
	}
	return files
}
