package fleetsim

import (
	"cmp"
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
)

// Tenancy in Open Cluster Management's model: an AppConfig in namespace N reaches only the members of
// the ManagedClusterSets bound to N by a ManagedClusterSetBinding (named as its set). A fleet is
// either in one set of every cluster, OCM's global (GlobalSet), or spread over several exclusive sets
// (ExclusiveSet) by the label RegisterClusters gives each cluster (ClusterOptions.ClusterSets).

// GlobalClusterSet is the name of OCM's set of every cluster.
const GlobalClusterSet = "global"

// GlobalSet is OCM's global ManagedClusterSet: selector type LabelSelector with an empty selector,
// which every cluster matches.
func GlobalSet() *clusterv1beta2.ManagedClusterSet {
	return &clusterv1beta2.ManagedClusterSet{
		ObjectMeta: metav1.ObjectMeta{Name: GlobalClusterSet},
		Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
			SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{},
		}},
	}
}

// ExclusiveSet is the ManagedClusterSet name of selector type ExclusiveClusterSetLabel: its members
// are the clusters labelled cluster.open-cluster-management.io/clusterset=<name> (ClusterSetLabel).
func ExclusiveSet(name string) *clusterv1beta2.ManagedClusterSet {
	return &clusterv1beta2.ManagedClusterSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
			SelectorType: clusterv1beta2.ExclusiveClusterSetLabel,
		}},
	}
}

// ClusterSetNames are the names of n sets: the prefix (default "fleet-set-") and k from 0 in three
// digits or more.
func ClusterSetNames(prefix string, n int) []string {
	names := make([]string, n)
	for k := range names {
		names[k] = fmt.Sprintf("%s%03d", cmp.Or(prefix, "fleet-set-"), k)
	}
	return names
}

// SetOf is the set the i-th cluster (from 0) joins when the clusters are spread over sets
// round-robin: sets[i mod len(sets)], so that no set has more than one cluster more than another;
// "" when there are no sets.
func SetOf(i int, sets []string) string {
	if len(sets) == 0 {
		return ""
	}
	return sets[i%len(sets)]
}

// Binding is the ManagedClusterSetBinding that binds set to namespace. OCM binds a set only by a
// binding named as the set.
func Binding(namespace, set string) *clusterv1beta2.ManagedClusterSetBinding {
	return &clusterv1beta2.ManagedClusterSetBinding{
		ObjectMeta: metav1.ObjectMeta{Name: set, Namespace: namespace},
		Spec:       clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set},
	}
}

// BindClusterSets creates, on the hub cfg reaches, the sets and the namespaces and binds every set to
// every one of the namespaces: len(sets)×len(namespaces) bindings, at most concurrency (default 16)
// created at once. Objects that exist already are left as they are. Give it a FastConfig.
func BindClusterSets(ctx context.Context, cfg *rest.Config, sets []*clusterv1beta2.ManagedClusterSet, namespaces []string, concurrency int) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("bind cluster sets: %w", err)
	}
	clusters, err := clusterclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("bind cluster sets: %w", err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cmp.Or(concurrency, 16))
	for _, set := range sets {
		g.Go(func() error {
			if _, err := clusters.ClusterV1beta2().ManagedClusterSets().Create(gctx, set, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create ManagedClusterSet %s: %w", set.Name, err)
			}
			return nil
		})
	}
	for _, name := range namespaces {
		g.Go(func() error {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if _, err := kube.CoreV1().Namespaces().Create(gctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create namespace %s: %w", name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(cmp.Or(concurrency, 16))
	for _, ns := range namespaces {
		for _, set := range sets {
			g.Go(func() error {
				b := Binding(ns, set.Name)
				if _, err := clusters.ClusterV1beta2().ManagedClusterSetBindings(ns).Create(gctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					return fmt.Errorf("create ManagedClusterSetBinding %s/%s: %w", ns, b.Name, err)
				}
				return nil
			})
		}
	}
	return g.Wait()
}
