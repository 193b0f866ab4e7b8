// Package hub holds the hub controllers: Component revisions, rendering of ApplicationConfigurations
// (parameters, traits, patch traits, apply-once stamps), placement onto managed clusters, one
// ManifestWork per application and cluster, and the aggregation of ManifestWork status back into the
// ApplicationConfiguration.
package hub
