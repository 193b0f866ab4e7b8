package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of the OAM types.
const GroupName = "core.oam.dev"

// SchemeGroupVersion is the group and version of every type in this package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha2"}

var (
	// SchemeBuilder registers this package's types. It uses apimachinery's builder rather than
	// controller-runtime's so that the API package depends on apimachinery alone.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource returns the group-qualified resource of an unqualified resource name.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&Component{}, &ComponentList{},
		&ApplicationConfiguration{}, &ApplicationConfigurationList{},
		&TraitDefinition{}, &TraitDefinitionList{},
		&WorkloadDefinition{}, &WorkloadDefinitionList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
