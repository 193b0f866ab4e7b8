package registration

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
)

// Remove undoes Add on the hub: it deletes the ManagedCluster and the cluster's namespace when Add
// made it (its ManifestWorks with it: an agent still running removes what they applied, as OCM's does),
// otherwise the ServiceAccount, its token, its binding and the Lease, so the credential reaches
// nothing from then on. It refuses a ManagedCluster Add did not make; what is already gone is no
// error.
func Remove(ctx context.Context, hub *rest.Config, name string) error {
	if name == "" {
		return errors.New("a cluster name is required")
	}
	kube, err := kubernetes.NewForConfig(hub)
	if err != nil {
		return fmt.Errorf("hub client: %w", err)
	}
	clusters, err := clusterclient.NewForConfig(hub)
	if err != nil {
		return fmt.Errorf("hub client: %w", err)
	}
	mc, err := clusters.ClusterV1().ManagedClusters().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("get ManagedCluster %s: %w", name, err)
	default:
		if err := ownedByFerry(mc); err != nil {
			return err
		}
		if err := ignoreNotFound(clusters.ClusterV1().ManagedClusters().Delete(ctx, name, metav1.DeleteOptions{})); err != nil {
			return fmt.Errorf("delete ManagedCluster %s: %w", name, err)
		}
	}
	// The agent's right on the ManagedCluster's status: cluster-scoped, gone with neither the
	// ManagedCluster nor the namespace.
	if err := ignoreNotFound(kube.RbacV1().ClusterRoleBindings().Delete(ctx, AgentClusterStatusRole(name), metav1.DeleteOptions{})); err != nil {
		return fmt.Errorf("delete ClusterRoleBinding %s: %w", AgentClusterStatusRole(name), err)
	}
	if err := ignoreNotFound(kube.RbacV1().ClusterRoles().Delete(ctx, AgentClusterStatusRole(name), metav1.DeleteOptions{})); err != nil {
		return fmt.Errorf("delete ClusterRole %s: %w", AgentClusterStatusRole(name), err)
	}
	ns, err := kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get namespace %s: %w", name, err)
	}
	if ns.Labels[RegisteredByLabel] == RegisteredByFerry {
		if err := ignoreNotFound(kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})); err != nil {
			return fmt.Errorf("delete namespace %s: %w", name, err)
		}
		return nil
	}
	// The namespace was there before Add: take back only what Add put in it. The ServiceAccount
	// goes first; its token stops working with it.
	deletes := []struct {
		what string
		del  func() error
	}{
		{"ServiceAccount", func() error {
			return kube.CoreV1().ServiceAccounts(name).Delete(ctx, AgentServiceAccount, metav1.DeleteOptions{})
		}},
		{"token Secret", func() error {
			return kube.CoreV1().Secrets(name).Delete(ctx, AgentServiceAccount+"-token", metav1.DeleteOptions{})
		}},
		{"RoleBinding", func() error {
			return kube.RbacV1().RoleBindings(name).Delete(ctx, AgentServiceAccount, metav1.DeleteOptions{})
		}},
		{"Lease", func() error { return kube.CoordinationV1().Leases(name).Delete(ctx, LeaseName, metav1.DeleteOptions{}) }},
	}
	for _, d := range deletes {
		if err := ignoreNotFound(d.del()); err != nil {
			return fmt.Errorf("delete the agent's %s in namespace %s: %w", d.what, name, err)
		}
	}
	return nil
}

// RemoveFromSpoke deletes the Secret hub-kubeconfig-secret that Add wrote into namespace of the
// managed cluster spoke reaches (one it did not write is refused).
func RemoveFromSpoke(ctx context.Context, spoke *rest.Config, namespace string) error {
	kube, err := kubernetes.NewForConfig(spoke)
	if err != nil {
		return fmt.Errorf("managed cluster client: %w", err)
	}
	secret, err := kube.CoreV1().Secrets(namespace).Get(ctx, HubKubeconfigSecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get Secret %s/%s on the managed cluster: %w", namespace, HubKubeconfigSecret, err)
	}
	if err := writtenByFerry(secret); err != nil {
		return err
	}
	precondition := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &secret.UID}}
	if err := ignoreNotFound(kube.CoreV1().Secrets(namespace).Delete(ctx, HubKubeconfigSecret, precondition)); err != nil {
		return fmt.Errorf("delete Secret %s/%s on the managed cluster: %w", namespace, HubKubeconfigSecret, err)
	}
	return nil
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
