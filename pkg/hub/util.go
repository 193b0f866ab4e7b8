package hub

import (
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
)

// Short names for the OCM types the hub watches.
type (
	managedCluster    = clusterv1.ManagedCluster
	placementDecision = clusterv1beta1.PlacementDecision
)
