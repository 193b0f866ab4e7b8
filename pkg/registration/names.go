package registration

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

const (
	// RegisteredByLabel, with the value RegisteredByFerry, marks what Add made on the hub: the
	// ManagedCluster (whose conditions ferry-hub then keeps), the Lease, and the namespace when Add
	// created it (Remove deletes only a namespace so marked).
	RegisteredByLabel = "ferry.io/registered-by"
	RegisteredByFerry = "ferry-hub"

	// LeaseName is the Lease in the cluster's namespace on the hub that the cluster's agent renews
	// while it leads. OCM's registration agent renews managed-cluster-lease; Ferry's has a name of its
	// own so that the two never stand in for each other.
	LeaseName = "ferry-agent"
	// AgentServiceAccount is the hub identity of the cluster's agent, in the cluster's namespace, and
	// the name of its RoleBinding and token Secret.
	AgentServiceAccount = "ferry-agent"
	// AgentClusterRole is the name of deploy/agent/hub-clusterrole.yaml's ClusterRole.
	AgentClusterRole = "ferry:agent"

	// HubKubeconfigSecret is the Secret the agent reads its hub credential from, named and laid out
	// (kubeconfig, cluster-name) as `clusteradm join` leaves it; DefaultAgentNamespace is where
	// deploy/agent/spoke runs the agent.
	HubKubeconfigSecret   = "hub-kubeconfig-secret"
	DefaultAgentNamespace = "ferry-agent"

	// DefaultLeaseDurationSeconds is how often the agent renews its Lease, as OCM's default
	// ManagedCluster spec.leaseDurationSeconds.
	DefaultLeaseDurationSeconds = 60
	// LeaseGraceTimes is how many lease durations without a renewal turn a cluster's Available
	// condition Unknown; OCM's hub uses the same factor.
	LeaseGraceTimes = 5

	// DefaultClusterSet is the ManagedClusterSet a new cluster joins unless told another, as OCM's hub
	// puts every new cluster into its set default: a ManagedClusterSetBinding of it in a namespace
	// lets that namespace's AppConfigs reach the cluster.
	DefaultClusterSet = "default"
)

// AgentClusterStatusRole is the name of the ClusterRole, and of its ClusterRoleBinding, that let the
// agent of cluster read its ManagedCluster and write its status (the ClusterClaims the agent reports):
// the agent's one right outside its cluster's namespace, on that one object.
func AgentClusterStatusRole(cluster string) string { return "ferry:agent:" + cluster }

// LeaseDuration is how often the agent renews lease: its spec.leaseDurationSeconds, or the default.
func LeaseDuration(lease *coordinationv1.Lease) time.Duration {
	if lease != nil && lease.Spec.LeaseDurationSeconds != nil && *lease.Spec.LeaseDurationSeconds > 0 {
		return time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	}
	return DefaultLeaseDurationSeconds * time.Second
}
