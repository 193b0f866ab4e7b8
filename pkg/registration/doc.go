// Package registration registers a managed cluster with a Ferry hub for users who do not run Open
// Cluster Management's registration agent. Add makes, on the hub, the ManagedCluster, its namespace, a
// ServiceAccount whose token may do only what deploy/agent/hub-clusterrole.yaml allows in that
// namespace, and the Lease the cluster's agent renews; it returns the agent's hub credential, which
// Credential.WriteDir and Credential.ApplyToSpoke lay out as the Secret hub-kubeconfig-secret. Remove
// undoes Add. `ferry-hub clusters add|remove` is the command line over both.
//
// A cluster registered here carries the label RegisteredByLabel; ferry-hub keeps the Joined and
// Available conditions of exactly those ManagedClusters (pkg/hub), so it never contends with OCM's
// registration controller over a cluster joined with `clusteradm join`.
package registration
