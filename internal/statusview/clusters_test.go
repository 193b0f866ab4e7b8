package statusview

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/ferry-mc/ferry/pkg/registration"
)

func TestForClusters(t *testing.T) {
	registered := clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster2", Labels: map[string]string{registration.RegisteredByLabel: registration.RegisteredByFerry}},
		Status: clusterv1.ManagedClusterStatus{Conditions: []metav1.Condition{
			cond(clusterv1.ManagedClusterConditionJoined, T, 0, "ManagedClusterJoined", ""),
			cond(clusterv1.ManagedClusterConditionAvailable, U, 0, "ManagedClusterLeaseUpdateStopped", "ferry-agent has not renewed the Lease"),
		}},
	}
	ocms := clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster1"},
		Status: clusterv1.ManagedClusterStatus{Conditions: []metav1.Condition{
			cond(clusterv1.ManagedClusterConditionJoined, T, 0, "ManagedClusterJoined", ""),
			cond(clusterv1.ManagedClusterConditionAvailable, T, 0, "ManagedClusterAvailable", "Managed cluster is available"),
		}},
	}
	fresh := clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster3"}}

	got := ForClusters([]clusterv1.ManagedCluster{registered, ocms, fresh}, map[string]int{"cluster1": 2, "cluster2": 1, "elsewhere": 7})
	want := []Cluster{
		{Name: "cluster1", Joined: T, Available: T, RegisteredBy: RegisteredByOther, Works: 2},
		{Name: "cluster2", Joined: T, Available: U, RegisteredBy: registration.RegisteredByFerry, Works: 1, Message: "ferry-agent has not renewed the Lease"},
		{Name: "cluster3", Joined: U, Available: U, RegisteredBy: RegisteredByOther, Works: 0,
			Message: "no agent or registration controller has reported the cluster's availability yet"},
	}
	if !slices.Equal(got.Clusters, want) {
		t.Errorf("clusters\n%+v\nwant\n%+v", got.Clusters, want)
	}
}
