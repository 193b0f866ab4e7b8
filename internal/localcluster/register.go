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
)

// RegisterSpokes does on the hub what joining and accepting a cluster does in Open Cluster Management:
// for every spoke, a ManagedCluster of its name accepted by the hub, and the namespace of that name in
// which its ManifestWorks live. Objects that exist already are left as they are.
func (e *Environment) RegisterSpokes(ctx context.Context) error {
	kube, err := kubernetes.NewForConfig(e.Hub.Config)
	if err != nil {
		return err
	}
	clusters, err := clusterclient.NewForConfig(e.Hub.Config)
	if err != nil {
		return err
	}
	for _, s := range e.Spokes {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.Name}}
		if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s on the hub: %w", s.Name, err)
		}
		mc := &clusterv1.ManagedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: s.Name},
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
