package manifests

import (
	"embed"
	"fmt"
	"io/fs"
	"path"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed ocm/hub/*.yaml ocm/spoke/*.yaml oam/*.yaml
var files embed.FS

// HubCRDs returns the CRDs a hub cluster serves: OCM's, and the OAM types generated from pkg/apis.
func HubCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	ocm, err := readCRDs("ocm/hub")
	if err != nil {
		return nil, err
	}
	oam, err := OAMCRDs()
	if err != nil {
		return nil, err
	}
	return append(ocm, oam...), nil
}

// OAMCRDs returns the CRDs of the core.oam.dev API, a subset of HubCRDs.
func OAMCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return readCRDs("oam")
}

// SpokeCRDs returns the CRDs a managed (spoke) cluster serves.
func SpokeCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return readCRDs("ocm/spoke")
}

func readCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	entries, err := fs.ReadDir(files, dir)
	if err != nil {
		return nil, fmt.Errorf("read embedded CRDs in %s: %w", dir, err)
	}
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(entries))
	for _, e := range entries {
		name := path.Join(dir, e.Name())
		data, err := files.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read embedded CRD %s: %w", name, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("decode CRD %s: %w", name, err)
		}
		if crd.Kind != "CustomResourceDefinition" {
			return nil, fmt.Errorf("decode CRD %s: kind is %q, want CustomResourceDefinition", name, crd.Kind)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}
