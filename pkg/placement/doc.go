// Package placement says which managed clusters an ApplicationConfiguration is delivered to, as pure
// functions of what the hub's API holds: the AppConfig's spec.placement, the ManagedClusters, the
// PlacementDecisions of the OCM Placement it refers to, and the ManagedClusterSets bound to its
// namespace. ferry-hub delivers by these rules and kubectl ferry explains them; both read the objects
// their own way (a cache, the user's own rights) and neither keeps a copy of the rules.
//
// The entry point is Explain: every cluster the placement names or matches, whether it is delivered to
// and, when not, why. ferry-hub, which must place ten thousand clusters often, calls its two halves
// directly: Select (the clusters the placement names that exist and are not being deleted) and
// BoundSets.Holds (whether the sets bound to the namespace, from Bind, hold a cluster).
package placement
