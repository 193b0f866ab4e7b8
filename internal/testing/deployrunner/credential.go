package deployrunner

import (
	"context"
	"fmt"
	"net/url"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TokenLifetime is how long a ServiceAccountKubeconfig token lasts: a working session. There is no
// kubelet on this machine to refresh a projected token, and local clusters live shorter than this.
const TokenLifetime = 7 * 24 * time.Hour

// ServiceAccountKubeconfig writes to path a kubeconfig for the cluster cfg reaches (named cluster in
// it and in errors) that authenticates as the ServiceAccount the Deployment's pods run as, with a
// token from the TokenRequest API: a process using it has exactly the RBAC the install grants that
// ServiceAccount, as its pod would. cfg must be allowed to request tokens (an administrator's). It
// returns the user name the cluster sees, system:serviceaccount:<namespace>:<name>.
func ServiceAccountKubeconfig(ctx context.Context, cluster string, cfg *rest.Config, d *appsv1.Deployment, path string) (string, error) {
	sa := d.Spec.Template.Spec.ServiceAccountName
	if sa == "" {
		sa = "default" // what a pod without serviceAccountName runs as
	}
	user := "system:serviceaccount:" + d.Namespace + ":" + sa
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", fmt.Errorf("token for %s on %s: %w", user, cluster, err)
	}
	seconds := int64(TokenLifetime / time.Second)
	token, err := kube.CoreV1().ServiceAccounts(d.Namespace).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for %s on %s: %w", user, cluster, err)
	}
	server, err := url.Parse(cfg.Host)
	if err != nil {
		return "", fmt.Errorf("server of %s: %w", cluster, err)
	}
	if server.Scheme == "" {
		server.Scheme = "https"
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[cluster] = &clientcmdapi.Cluster{Server: server.String(), CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	kc.Contexts[cluster] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: user}
	kc.CurrentContext = cluster
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", fmt.Errorf("kubeconfig of %s on %s: %w", user, cluster, err)
	}
	return user, nil
}
