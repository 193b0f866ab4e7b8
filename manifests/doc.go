// Package manifests holds the CustomResourceDefinitions Ferry serves and embeds them, so that tools and
// tests install exactly the committed YAML: the Open Cluster Management CRDs a hub needs (ManifestWork,
// ManagedCluster, ManagedClusterSet(Binding), Placement, PlacementDecision) and the one a spoke needs
// (AppliedManifestWork), and the OAM core.oam.dev CRDs the hub serves too. `make manifests` vendors the OCM
// CRDs from the pinned OCM api module and generates the OAM ones from pkg/apis/core/v1alpha2.
package manifests
