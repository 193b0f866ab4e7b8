// Package override renders, for one target cluster, what an AppConfig's overrides make of the work
// spec rendered for every cluster: ForCluster is the entry point, a pure function of (the revision's
// spec, its overrides and what they need of its components, the cluster's facts). ferry-hub delivers
// what it returns, and kubectl ferry render prints it.
//
// A cluster's facts are what Cluster holds: its name, labels and annotations, the ClusterClaims it
// reports and the OCM decision groups it is in. Overrides read them through references in their
// strings (Substitute).
package override
