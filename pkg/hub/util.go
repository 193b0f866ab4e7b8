package hub

import (
	"slices"

	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
)

// Short names for the OCM types the hub watches.
type (
	managedCluster    = clusterv1.ManagedCluster
	placementDecision = clusterv1beta1.PlacementDecision
)

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
