package statusview

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/ferry-mc/ferry/pkg/registration"
)

// RegisteredByOther is Cluster.RegisteredBy of a cluster `ferry-hub clusters add` did not register.
const RegisteredByOther = "other"

// ForClusters is the view of the hub's ManagedClusters, by name; works counts the ManifestWorks of each
// cluster's namespace.
func ForClusters(clusters []clusterv1.ManagedCluster, works map[string]int) Clusters {
	out := Clusters{Clusters: []Cluster{}}
	for _, mc := range clusters {
		c := Cluster{Name: mc.Name, Works: works[mc.Name], RegisteredBy: RegisteredByOther,
			Joined: metav1.ConditionUnknown, Available: metav1.ConditionUnknown}
		if mc.Labels[registration.RegisteredByLabel] == registration.RegisteredByFerry {
			c.RegisteredBy = registration.RegisteredByFerry
		}
		if joined := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined); joined != nil {
			c.Joined = joined.Status
		}
		if available := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable); available != nil {
			c.Available = available.Status
			if available.Status != metav1.ConditionTrue {
				c.Message = available.Message
			}
		} else {
			c.Message = "no agent or registration controller has reported the cluster's availability yet"
		}
		out.Clusters = append(out.Clusters, c)
	}
	slices.SortFunc(out.Clusters, func(x, y Cluster) int { return cmp.Compare(x.Name, y.Name) })
	return out
}
