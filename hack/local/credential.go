package main

import (
	"context"
	"fmt"
	"net/url"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ferry-mc/ferry/internal/localcluster"
)

// tokenLifetime is how long a binary's ServiceAccount token lasts: a working session. The local
// clusters go with `local-down`; there is no kubelet here to refresh a projected token.
const tokenLifetime = 7 * 24 * time.Hour

// writeServiceAccountKubeconfig writes to path a kubeconfig for the cluster that authenticates as the
// ServiceAccount the Deployment's pods run as, with a token from the TokenRequest API: the process then
// has exactly the RBAC its install grants that ServiceAccount, as its pod would. It returns the user
// name the cluster sees.
func writeServiceAccountKubeconfig(ctx context.Context, c *localcluster.Cluster, d *appsv1.Deployment, path string) (string, error) {
	sa := d.Spec.Template.Spec.ServiceAccountName
	if sa == "" {
		sa = "default" // what a pod without serviceAccountName runs as
	}
	user := "system:serviceaccount:" + d.Namespace + ":" + sa
	kube, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return "", err
	}
	seconds := int64(tokenLifetime / time.Second)
	token, err := kube.CoreV1().ServiceAccounts(d.Namespace).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for %s on %s: %w", user, c.Name, err)
	}
	server, err := url.Parse(c.Config.Host)
	if err != nil {
		return "", fmt.Errorf("server of %s: %w", c.Name, err)
	}
	if server.Scheme == "" {
		server.Scheme = "https"
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[c.Name] = &clientcmdapi.Cluster{Server: server.String(), CertificateAuthorityData: c.Config.CAData}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	kc.Contexts[c.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: user}
	kc.CurrentContext = c.Name
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", fmt.Errorf("kubeconfig of %s: %w", user, err)
	}
	return user, nil
}
