package localcluster

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteHubKubeconfigDir gives the spoke's agent a hub credential the way joining a cluster with
// `clusteradm join` does, and writes it into dir laid out as the hub-kubeconfig-secret: a kubeconfig
// naming tls.crt and tls.key by relative path, those two files, and cluster-name. The credential is the
// user system:open-cluster-management:<spoke>:agent, bound to role in the spoke's namespace only.
func (e *Environment) WriteHubKubeconfigDir(ctx context.Context, spoke string, role *rbacv1.ClusterRole, dir string) error {
	cfg, err := e.Hub.grant(ctx, "system:open-cluster-management:"+spoke+":agent", role, spoke)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	files := map[string][]byte{"tls.crt": cfg.CertData, "tls.key": cfg.KeyData, "cluster-name": []byte(spoke)}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	u, err := url.Parse(e.Hub.Config.Host)
	if err != nil {
		return err
	}
	if u.Scheme == "" {
		u.Scheme = "https"
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: u.String(), CertificateAuthorityData: e.Hub.Config.CAData}
	kc.AuthInfos["agent"] = &clientcmdapi.AuthInfo{ClientCertificate: "tls.crt", ClientKey: "tls.key"}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "agent"}
	kc.CurrentContext = "hub"
	return clientcmd.WriteToFile(*kc, filepath.Join(dir, "kubeconfig"))
}

// WriteHubControllerKubeconfig gives a controller running on the hub (ferry-hub) the user name, bound
// to role cluster-wide, and writes a kubeconfig for it to path.
func (e *Environment) WriteHubControllerKubeconfig(ctx context.Context, user string, role *rbacv1.ClusterRole, path string) error {
	cfg, err := e.HubControllerConfig(ctx, user, role)
	if err != nil {
		return err
	}
	return writeKubeconfig(path, e.Hub.Name, cfg)
}

// HubControllerConfig gives a controller running on the hub the user name, bound to role cluster-wide,
// and returns a client configuration for it.
func (e *Environment) HubControllerConfig(ctx context.Context, user string, role *rbacv1.ClusterRole) (*rest.Config, error) {
	return e.Hub.grant(ctx, user, role, "")
}

// grant adds a user to the cluster and binds role to it: in namespace, or cluster-wide when namespace
// is empty. It returns the user's client configuration.
func (c *Cluster) grant(ctx context.Context, user string, role *rbacv1.ClusterRole, namespace string) (*rest.Config, error) {
	cfg, err := c.AddUser(user, nil)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create ClusterRole %s: %w", role.Name, err)
	}
	roleRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}
	if namespace == "" {
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name}, RoleRef: roleRef, Subjects: subjects}
		if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("bind ClusterRole %s: %w", role.Name, err)
		}
		return cfg, nil
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: namespace}, RoleRef: roleRef, Subjects: subjects}
	if _, err := kube.RbacV1().RoleBindings(namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("bind %s in namespace %s: %w", role.Name, namespace, err)
	}
	return cfg, nil
}
