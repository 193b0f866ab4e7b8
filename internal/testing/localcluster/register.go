package localcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
)

// RegisterSpokes does on the hub what joining and accepting a cluster does in Open Cluster Management:
// for every spoke, a ManagedCluster of its name accepted by the hub, in OCM's ManagedClusterSet
// DefaultClusterSet (made if missing), and the namespace of that name in which its ManifestWorks live.
// Objects that exist already are left as they are.
func (e *Environment) RegisterSpokes(ctx context.Context) error {
	kube, err := kubernetes.NewForConfig(e.Hub.Config)
	if err != nil {
		return err
	}
	clusters, err := clusterclient.NewForConfig(e.Hub.Config)
	if err != nil {
		return err
	}
	if err := createClusterSet(ctx, clusters, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: DefaultClusterSet},
		Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.ExclusiveClusterSetLabel}}}); err != nil {
		return err
	}
	for _, s := range e.Spokes {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.Name}}
		if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s on the hub: %w", s.Name, err)
		}
		mc := &clusterv1.ManagedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: s.Name, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: DefaultClusterSet}},
			Spec: clusterv1.ManagedClusterSpec{
				HubAcceptsClient:            true,
				ManagedClusterClientConfigs: []clusterv1.ClientConfig{{URL: s.URL(), CABundle: s.Config.CAData}},
			},
		}
		if _, err := clusters.ClusterV1().ManagedClusters().Create(ctx, mc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create ManagedCluster %s on the hub: %w", s.Name, err)
		}
	}
	return nil
}

// The ManagedClusterSets OCM's hub makes: GlobalClusterSet holds every ManagedCluster (selector type
// LabelSelector, an empty selector), DefaultClusterSet those labelled into it, every new cluster unless
// told another (`ferry-hub clusters add` does the same).
const (
	GlobalClusterSet  = "global"
	DefaultClusterSet = "default"
)

// BindGlobalClusterSet makes the ManagedClusterSet GlobalClusterSet on the hub c if it is missing, and
// binds it to each namespace with a ManagedClusterSetBinding named after it, as a hub administrator
// does for a team: ferry-hub delivers an AppConfig only to the clusters of the sets bound to its
// namespace. Objects that exist already are left as they are.
func (c *Cluster) BindGlobalClusterSet(ctx context.Context, namespaces ...string) error {
	clusters, err := clusterclient.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	set := &clusterv1beta2.ManagedClusterSet{
		ObjectMeta: metav1.ObjectMeta{Name: GlobalClusterSet},
		Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
			SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{}}},
	}
	if err := createClusterSet(ctx, clusters, set); err != nil {
		return err
	}
	return c.BindClusterSet(ctx, GlobalClusterSet, namespaces...)
}

// BindClusterSet binds the ManagedClusterSet set to each namespace of the hub c with a
// ManagedClusterSetBinding named after it, as a hub administrator does; bindings that exist already
// are left as they are.
func (c *Cluster) BindClusterSet(ctx context.Context, set string, namespaces ...string) error {
	clusters, err := clusterclient.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	for _, ns := range namespaces {
		binding := &clusterv1beta2.ManagedClusterSetBinding{
			ObjectMeta: metav1.ObjectMeta{Name: set, Namespace: ns},
			Spec:       clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set},
		}
		if _, err := clusters.ClusterV1beta2().ManagedClusterSetBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("bind ManagedClusterSet %s to namespace %s: %w", set, ns, err)
		}
	}
	return nil
}

func createClusterSet(ctx context.Context, clusters clusterclient.Interface, set *clusterv1beta2.ManagedClusterSet) error {
	if _, err := clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, set, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ManagedClusterSet %s on the hub: %w", set.Name, err)
	}
	return nil
}
