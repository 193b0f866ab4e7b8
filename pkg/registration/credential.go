package registration

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Credential is a cluster agent's hub credential: the files of the Secret hub-kubeconfig-secret.
type Credential struct {
	ClusterName string
	// ClusterSet is the ManagedClusterSet the cluster is in.
	ClusterSet string
	// Kubeconfig reaches the hub with the agent's ServiceAccount token, inline.
	Kubeconfig []byte
}

// Files are the Secret's keys and values, the layout `ferry-agent --hub-kubeconfig-dir` reads.
func (c *Credential) Files() map[string][]byte {
	return map[string][]byte{"kubeconfig": c.Kubeconfig, "cluster-name": []byte(c.ClusterName)}
}

// WriteDir writes the files into dir (made if missing), readable by the owner only.
func (c *Credential) WriteDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, data := range c.Files() {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// Secret is the Secret HubKubeconfigSecret in namespace holding the files.
func (c *Credential) Secret(namespace string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: HubKubeconfigSecret, Namespace: namespace, Labels: ferryLabels()},
		Type:       corev1.SecretTypeOpaque,
		Data:       c.Files(),
	}
}

// ApplyToSpoke writes the Secret into namespace of the managed cluster spoke reaches, making the
// namespace if it is missing and replacing an older credential, so that the agent deploy/agent/spoke
// runs there finds it.
func (c *Credential) ApplyToSpoke(ctx context.Context, spoke *rest.Config, namespace string) error {
	kube, err := kubernetes.NewForConfig(spoke)
	if err != nil {
		return fmt.Errorf("managed cluster client: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s on the managed cluster: %w", namespace, err)
	}
	want := c.Secret(namespace)
	secrets := kube.CoreV1().Secrets(namespace)
	have, err := secrets.Get(ctx, want.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, err := secrets.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create Secret %s/%s on the managed cluster: %w", namespace, want.Name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get Secret %s/%s on the managed cluster: %w", namespace, want.Name, err)
	}
	if err := writtenByFerry(have); err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(have.Data, want.Data) {
		return nil
	}
	have.Data = want.Data
	if _, err := secrets.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update Secret %s/%s on the managed cluster: %w", namespace, want.Name, err)
	}
	return nil
}

// renderKubeconfig is a kubeconfig reaching server, trusting ca, with token.
func renderKubeconfig(server string, ca, token []byte) ([]byte, error) {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("hub server %q: want a URL such as https://hub.example.com:6443", server)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	kc.AuthInfos["ferry-agent"] = &clientcmdapi.AuthInfo{Token: string(token)}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "ferry-agent"}
	kc.CurrentContext = "hub"
	return clientcmd.Write(*kc)
}

// writtenByFerry refuses a hub-kubeconfig-secret that Add did not write: on a cluster joined with
// `clusteradm join` it is the klusterlet's, and replacing it would cut OCM's agents off their hub.
func writtenByFerry(s *corev1.Secret) error {
	if s.Labels[RegisteredByLabel] == RegisteredByFerry {
		return nil
	}
	return fmt.Errorf("Secret %s/%s on the managed cluster was not written by ferry-hub (no label %s=%s), e.g. it is a klusterlet's: "+
		"left as it is; choose another --agent-namespace", s.Namespace, s.Name, RegisteredByLabel, RegisteredByFerry)
}
