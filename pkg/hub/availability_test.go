package hub

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// A registered cluster's Available condition follows its Lease: Unknown until an agent renews it,
// True while renewals come within 5 lease durations, Unknown after; the recheck is when it would go
// stale.
func TestComputeClusterConditions(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
	lease := func(renewedAgo time.Duration) *coordinationv1.Lease {
		l := &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](10)}}
		if renewedAgo >= 0 {
			l.Spec.RenewTime = &metav1.MicroTime{Time: now.Add(-renewedAgo)}
		}
		return l
	}
	cases := []struct {
		name      string
		lease     *coordinationv1.Lease
		joined    metav1.ConditionStatus // "" when the condition must be absent
		available metav1.ConditionStatus
		reason    string
		recheck   time.Duration
	}{
		{"no Lease", nil, "", metav1.ConditionUnknown, "WaitingForAgent", 0},
		{"never renewed", lease(-1), "", metav1.ConditionUnknown, "WaitingForAgent", 0},
		{"just renewed", lease(0), metav1.ConditionTrue, metav1.ConditionTrue, "ManagedClusterAvailable", 50 * time.Second},
		{"renewed 49s ago", lease(49 * time.Second), metav1.ConditionTrue, metav1.ConditionTrue, "ManagedClusterAvailable", time.Second},
		{"renewed 50s ago", lease(50 * time.Second), metav1.ConditionTrue, metav1.ConditionUnknown, "ManagedClusterLeaseUpdateStopped", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conds, recheck := computeClusterConditions(mc, c.lease, now)
			byType := map[string]metav1.Condition{}
			for _, cond := range conds {
				byType[cond.Type] = cond
			}
			if byType[clusterv1.ManagedClusterConditionHubAccepted].Status != metav1.ConditionTrue {
				t.Errorf("HubAccepted = %q, want True", byType[clusterv1.ManagedClusterConditionHubAccepted].Status)
			}
			if got := byType[clusterv1.ManagedClusterConditionJoined].Status; got != c.joined {
				t.Errorf("Joined = %q, want %q", got, c.joined)
			}
			avail := byType[clusterv1.ManagedClusterConditionAvailable]
			if avail.Status != c.available || avail.Reason != c.reason || avail.Message == "" {
				t.Errorf("Available = %s/%s %q, want %s/%s with a message", avail.Status, avail.Reason, avail.Message, c.available, c.reason)
			}
			if recheck != c.recheck {
				t.Errorf("recheck in %s, want %s", recheck, c.recheck)
			}
		})
	}
}
