// Package v1alpha2 holds the OAM core.oam.dev/v1alpha2 API types Ferry's hub serves: Component,
// ApplicationConfiguration, TraitDefinition and WorkloadDefinition.
package v1alpha2
