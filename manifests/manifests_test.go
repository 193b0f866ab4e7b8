package manifests

import (
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestHubAndSpokeCRDs(t *testing.T) {
	hub, err := HubCRDs()
	if err != nil {
		t.Fatal(err)
	}
	spoke, err := SpokeCRDs()
	if err != nil {
		t.Fatal(err)
	}
	wantHub := []string{
		"applicationconfigurations.core.oam.dev",
		"components.core.oam.dev",
		"managedclusters.cluster.open-cluster-management.io",
		"managedclustersetbindings.cluster.open-cluster-management.io",
		"managedclustersets.cluster.open-cluster-management.io",
		"manifestworks.work.open-cluster-management.io",
		"placementdecisions.cluster.open-cluster-management.io",
		"placements.cluster.open-cluster-management.io",
		"traitdefinitions.core.oam.dev",
		"workloaddefinitions.core.oam.dev",
	}
	if got := names(hub); !slices.Equal(got, wantHub) {
		t.Errorf("hub CRDs = %v, want %v", got, wantHub)
	}
	if got, want := names(spoke), []string{"appliedmanifestworks.work.open-cluster-management.io", "clusterclaims.cluster.open-cluster-management.io"}; !slices.Equal(got, want) {
		t.Errorf("spoke CRDs = %v, want %v", got, want)
	}
}

// Ferry's strategies beyond OCM's enum must be accepted by the ManifestWork schema, or the API server
// rejects a work that uses them.
func TestManifestWorkAcceptsFerryStrategies(t *testing.T) {
	hub, err := HubCRDs()
	if err != nil {
		t.Fatal(err)
	}
	var mw *apiextensionsv1.CustomResourceDefinition
	for _, crd := range hub {
		if crd.Name == "manifestworks.work.open-cluster-management.io" {
			mw = crd
		}
	}
	if mw == nil {
		t.Fatal("no ManifestWork CRD")
	}
	typ := mw.Spec.Versions[0].Schema.OpenAPIV3Schema.
		Properties["spec"].Properties["manifestConfigs"].Items.Schema.
		Properties["updateStrategy"].Properties["type"]
	var got []string
	for _, v := range typ.Enum {
		got = append(got, string(v.Raw))
	}
	want := []string{`"Update"`, `"CreateOnly"`, `"ServerSideApply"`, `"ReadOnly"`, `"ApplyOnce"`, `"ApplyOnceForce"`}
	if !slices.Equal(got, want) {
		t.Errorf("updateStrategy.type enum = %v, want %v", got, want)
	}
}

func names(crds []*apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, c := range crds {
		out = append(out, c.Name)
	}
	slices.Sort(out)
	return out
}
