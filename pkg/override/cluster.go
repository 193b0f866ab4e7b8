package override

import (
	"fmt"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// Cluster is what an override may select a target cluster by, or read of it.
type Cluster struct {
	Name        string
	Labels      map[string]string
	Annotations map[string]string
	// Claims are the ClusterClaims the cluster reports (ManagedCluster status.clusterClaims), by name.
	Claims map[string]string
	// DecisionGroups are the OCM decision groups the cluster is in, by name and by index, when the
	// application is placed by an OCM Placement.
	DecisionGroups []string
}

// ClusterOf is the facts of a ManagedCluster, in the decision groups given.
func ClusterOf(mc *clusterv1.ManagedCluster, decisionGroups []string) Cluster {
	c := Cluster{Name: mc.Name, Labels: mc.Labels, Annotations: mc.Annotations, DecisionGroups: decisionGroups}
	if len(mc.Status.ClusterClaims) > 0 {
		c.Claims = make(map[string]string, len(mc.Status.ClusterClaims))
		for _, claim := range mc.Status.ClusterClaims {
			c.Claims[claim.Name] = claim.Value
		}
	}
	return c
}

// Selects reports whether o selects c: one of its names, its selector or its decision groups takes c,
// or o names none of them.
func Selects(o *v1alpha2.Override, c Cluster) (bool, error) {
	if len(o.Clusters) == 0 && o.ClusterSelector == nil && len(o.DecisionGroups) == 0 {
		return true, nil
	}
	if slices.Contains(o.Clusters, c.Name) {
		return true, nil
	}
	if slices.ContainsFunc(c.DecisionGroups, func(g string) bool { return slices.Contains(o.DecisionGroups, g) }) {
		return true, nil
	}
	if o.ClusterSelector == nil {
		return false, nil
	}
	selector, err := metav1.LabelSelectorAsSelector(o.ClusterSelector)
	if err != nil {
		return false, &Error{Override: o.Name, Cluster: c.Name, Err: fmt.Errorf("clusterSelector: %w", err)}
	}
	return selector.Matches(labels.Set(c.Labels)), nil
}

// DecisionGroups are the decision groups each cluster of a Placement's decisions is in, by name and by
// index (the labels of the PlacementDecisions holding it), by cluster name.
func DecisionGroups(decisions []clusterv1beta1.PlacementDecision) map[string][]string {
	out := map[string][]string{}
	for _, d := range decisions {
		var groups []string
		if name := d.Labels[clusterv1beta1.DecisionGroupNameLabel]; name != "" {
			groups = append(groups, name)
		}
		if index, err := strconv.Atoi(d.Labels[clusterv1beta1.DecisionGroupIndexLabel]); err == nil {
			groups = append(groups, strconv.Itoa(index))
		}
		for _, dec := range d.Status.Decisions {
			out[dec.ClusterName] = append(out[dec.ClusterName], groups...)
		}
	}
	return out
}
