// Package manifests holds the CustomResourceDefinitions Ferry serves and embeds them, so that tools and
// tests install exactly the committed YAML: the Open Cluster Management CRDs a hub needs (ManifestWork,
// ManagedCluster, ManagedClusterSet(Binding), Placement, PlacementDecision) and the one a spoke needs
// (AppliedManifestWork). The OCM CRDs are vendored from the pinned OCM api module by `make manifests`.
package manifests
