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
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteHubKubeconfigDir gives the spoke's agent a hub credential the way joining a cluster with
// `clusteradm join` does, and writes it into dir laid out as the hub-kubeconfig-secret: a kubeconfig
// naming tls.crt and tls.key by relative path, those two files, and cluster-name. The credential is the
// user system:open-cluster-management:<spoke>:agent, bound to role in the spoke's namespace only.
func (e *Environment) WriteHubKubeconfigDir(ctx context.Context, spoke string, role *rbacv1.ClusterRole, dir string) error {
	user := "system:open-cluster-management:" + spoke + ":agent"
	cfg, err := e.Hub.AddUser(user, nil)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(e.Hub.Config)
	if err != nil {
		return err
	}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRole %s: %w", role.Name, err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: spoke},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
	}
	if _, err := kube.RbacV1().RoleBindings(spoke).Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("bind %s in namespace %s: %w", role.Name, spoke, err)
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
