package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DefinitionReference names the CustomResourceDefinition that defines a workload or trait kind.
type DefinitionReference struct {
	// Name of the CRD, <plural>.<group>, e.g. "deployments.apps" or "manualscalertraits.core.oam.dev".
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// TraitDefinitionSpec says how the hub treats traits of one kind.
type TraitDefinitionSpec struct {
	// Reference is the CRD of the trait kind.
	Reference DefinitionReference `json:"definitionRef"`

	// RevisionEnabled traits manage workload revisions themselves (a rollout trait): a component with such a
	// trait renders its workload named after the component revision, <component>-v<N>, so that old and
	// new revisions run side by side, instead of updating one workload named after the component.
	// +optional
	RevisionEnabled bool `json:"revisionEnabled,omitempty"`

	// WorkloadRefPath is the field of the trait, e.g. "spec.workloadRef", that the hub sets to a
	// reference (apiVersion, kind, name) to the trait's workload. Empty: no reference is injected.
	// +optional
	WorkloadRefPath string `json:"workloadRefPath,omitempty"`

	// AppliesToWorkloads lists the workload kinds the trait may be attached to, as CRD names
	// ("deployments.apps") or <group>/<version>.<Kind>. Empty: any workload.
	// +optional
	AppliesToWorkloads []string `json:"appliesToWorkloads,omitempty"`

	// Patch marks a patch trait: instead of being delivered as an object of its own, the patch
	// it publishes is merged into the workload before the workload is emitted, and a change of it creates
	// a new component revision.
	// +optional
	Patch bool `json:"patch,omitempty"`

	// Extension holds whatever else a platform wants to record about the trait; the hub ignores it.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Extension *runtime.RawExtension `json:"extension,omitempty"`
}

// TraitDefinition registers a trait kind with the hub and says how its traits are rendered. It is named
// after the trait's CRD and cluster-scoped: like the CRD it describes, it is one platform-wide fact, not
// something each namespace redefines.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=trait,categories=oam
// +kubebuilder:printcolumn:name="DEFINITION-NAME",type=string,JSONPath=".spec.definitionRef.name"
// +kubebuilder:printcolumn:name="REVISION-ENABLED",type=boolean,JSONPath=".spec.revisionEnabled"
// +kubebuilder:printcolumn:name="PATCH",type=boolean,JSONPath=".spec.patch"
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=".metadata.creationTimestamp"
type TraitDefinition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec TraitDefinitionSpec `json:"spec"`
}

// TraitDefinitionList is a list of TraitDefinitions.
//
// +kubebuilder:object:root=true
type TraitDefinitionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TraitDefinition `json:"items"`
}

// WorkloadDefinitionSpec says which CRD defines a workload kind.
type WorkloadDefinitionSpec struct {
	// Reference is the CRD of the workload kind.
	Reference DefinitionReference `json:"definitionRef"`

	// Extension holds whatever else a platform wants to record about the workload; the hub ignores it.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Extension *runtime.RawExtension `json:"extension,omitempty"`
}

// WorkloadDefinition registers a workload kind with the hub. Cluster-scoped for the same reason as
// TraitDefinition.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=workload,categories=oam
// +kubebuilder:printcolumn:name="DEFINITION-NAME",type=string,JSONPath=".spec.definitionRef.name"
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=".metadata.creationTimestamp"
type WorkloadDefinition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec WorkloadDefinitionSpec `json:"spec"`
}

// WorkloadDefinitionList is a list of WorkloadDefinitions.
//
// +kubebuilder:object:root=true
type WorkloadDefinitionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkloadDefinition `json:"items"`
}
