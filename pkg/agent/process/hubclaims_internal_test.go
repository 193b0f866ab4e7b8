package process

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
)

// The claims a ManagedCluster's status holds, by OCM's registration agent's rules: reserved names
// first, then the others by name and cut at the maximum, none marked spoke-only.
func TestClaimsToReportFollowOCMsRegistrationAgent(t *testing.T) {
	claim := func(name, value string, spokeOnly bool) *clusterv1alpha1.ClusterClaim {
		c := &clusterv1alpha1.ClusterClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterClaimSpec{Value: value}}
		if spokeOnly {
			c.Labels = map[string]string{claimSpokeOnlyLabel: ""}
		}
		return c
	}
	claims := []*clusterv1alpha1.ClusterClaim{
		claim("zone.example.com", "a", false),
		claim("region.open-cluster-management.io", "eu", false),
		claim("product.open-cluster-management.io", "k8s", false),
		claim("id.k8s.io", "4f2a", false),
		claim("kept.example.com", "local", true),
		claim("color.example.com", "blue", false),
	}
	for _, tc := range []struct {
		maxCustom int
		want      string
	}{
		{20, "[{id.k8s.io 4f2a} {product.open-cluster-management.io k8s} {color.example.com blue} {region.open-cluster-management.io eu} {zone.example.com a}]"},
		{1, "[{id.k8s.io 4f2a} {product.open-cluster-management.io k8s} {color.example.com blue}]"},
		{0, "[{id.k8s.io 4f2a} {product.open-cluster-management.io k8s}]"},
	} {
		if got := fmt.Sprint(claimsToReport(claims, tc.maxCustom)); got != tc.want {
			t.Errorf("max %d custom claims: %s, want %s", tc.maxCustom, got, tc.want)
		}
	}
}
