package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ComponentSpec is what a Component describes: one workload and the parameters an AppConfig may set in it.
type ComponentSpec struct {
	// Workload is the Kubernetes object this component renders to, e.g. a Deployment. Any kind is
	// accepted; the hub does not need to know its schema.
	// +kubebuilder:validation:EmbeddedResource
	// +kubebuilder:pruning:PreserveUnknownFields
	Workload runtime.RawExtension `json:"workload"`

	// Parameters are the values an AppConfig may set through spec.components[].parameterValues.
	// +optional
	// +listType=map
	// +listMapKey=name
	Parameters []ComponentParameter `json:"parameters,omitempty"`
}

// ComponentParameter names a value an AppConfig may set and the workload fields it is written to.
type ComponentParameter struct {
	// Name is how parameterValues refer to this parameter.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// FieldPaths are the workload fields set to the parameter's value, e.g.
	// "spec.template.spec.containers[0].image".
	// +kubebuilder:validation:MinItems=1
	FieldPaths []string `json:"fieldPaths"`

	// Required parameters must be given a value by every AppConfig that uses the component.
	// +optional
	Required bool `json:"required,omitempty"`

	// Description tells the AppConfig's author what the parameter is for.
	// +optional
	Description string `json:"description,omitempty"`
}

// ComponentStatus is what the hub observed of a Component.
type ComponentStatus struct {
	// ObservedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions of the component, e.g. whether its latest revision could be recorded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LatestRevision is the ControllerRevision (<component>-v<N>) holding the current spec.
	// +optional
	LatestRevision *Revision `json:"latestRevision,omitempty"`
}

// Revision names one ControllerRevision of a Component.
type Revision struct {
	// Name of the ControllerRevision, <component>-v<N>.
	Name string `json:"name"`
	// Revision is N: it increases by one with every change of the component's spec.
	Revision int64 `json:"revision"`
}

// Component is a reusable workload: an AppConfig instantiates it, with parameter values and traits, on
// the clusters it places the application on. Every change of its spec is recorded as a new revision.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=comp,categories=oam
// +kubebuilder:printcolumn:name="WORKLOAD-KIND",type=string,JSONPath=".spec.workload.kind"
// +kubebuilder:printcolumn:name="LATEST-REVISION",type=string,JSONPath=".status.latestRevision.name"
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=".metadata.creationTimestamp"
type Component struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ComponentSpec   `json:"spec"`
	Status ComponentStatus `json:"status,omitempty"`
}

// ComponentList is a list of Components.
//
// +kubebuilder:object:root=true
type ComponentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Component `json:"items"`
}
