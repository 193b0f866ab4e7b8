// Package v1alpha2 holds the OAM core.oam.dev/v1alpha2 API types Ferry's hub serves: Component,
// ApplicationConfiguration, TraitDefinition and WorkloadDefinition. YAML written for the OAM Kubernetes
// runtime decodes into them unchanged; Ferry adds only the AppConfig's placement and its per-cluster status.
// The deepcopy code and the CRDs in manifests/oam are generated from these files by `make manifests`.
//
// +kubebuilder:object:generate=true
// +groupName=core.oam.dev
package v1alpha2
