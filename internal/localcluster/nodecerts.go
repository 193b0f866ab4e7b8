package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// A cluster with a real node has certificates envtest does not make. Its pods reach the API server
// through the `kubernetes` Service, so the serving certificate must name the Service's ClusterIP and
// DNS names besides the address the server binds; and the API server and the kubelet authenticate
// each other. One certificate authority of the cluster's own signs all of them; envtest's client CA
// still signs the users' certificates (AddUser).

// serviceClusterIPRange is the API server's Service network (envtest's default); its first address
// is the `kubernetes` Service.
const (
	serviceClusterIPRange = "10.0.0.0/24"
	kubernetesServiceIP   = "10.0.0.1"
)

// certAuthority signs the certificates of a cluster with a real node.
type certAuthority struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

func newCertAuthority(name string) (*certAuthority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour), // tolerate a clock a little behind
		NotAfter:              time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &certAuthority{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// certRequest says what a certificate is for.
type certRequest struct {
	commonName    string
	organizations []string // a client's groups
	ips           []net.IP // a server's addresses
	dnsNames      []string
	server        bool
}

// issue writes a certificate for req and its key, PEM encoded, to certFile and keyFile.
func (ca *certAuthority) issue(req certRequest, certFile, keyFile string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	usage := x509.ExtKeyUsageClientAuth
	if req.server {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: req.commonName, Organization: req.organizations},
		NotBefore:    ca.cert.NotBefore,
		NotAfter:     ca.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  req.ips,
		DNSNames:     req.dnsNames,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return fmt.Errorf("sign %s: %w", req.commonName, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
}

// writeRealNodeAPIServerCerts writes into the API server's certificate directory what envtest would
// otherwise generate there — the serving certificate (apiserver.crt/key) and the service-account
// signing key (sa-signer.crt/key) — with a serving certificate that also names the `kubernetes`
// Service, plus the API server's client certificate for the kubelet. envtest generates nothing when
// apiserver.crt exists, so the caller must also hand it the CA (SecureServing.CA).
func writeRealNodeAPIServerCerts(ca *certAuthority, certDir string, nodeIP net.IP) error {
	serving := certRequest{
		commonName: "kube-apiserver",
		server:     true,
		ips:        []net.IP{net.ParseIP("127.0.0.1"), nodeIP, net.ParseIP(kubernetesServiceIP)},
		dnsNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	}
	if err := ca.issue(serving, filepath.Join(certDir, "apiserver.crt"), filepath.Join(certDir, "apiserver.key")); err != nil {
		return err
	}
	// The service-account signer is a key pair, not a chain: a certificate of its own makes it.
	saCA, err := newCertAuthority("service-account-signer")
	if err != nil {
		return err
	}
	saKey, err := x509.MarshalECPrivateKey(saCA.key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(certDir, "sa-signer.crt"), saCA.certPEM, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(certDir, "sa-signer.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saKey}), 0o600); err != nil {
		return err
	}
	// system:masters, so that the kubelet's webhook authorization lets `kubectl logs` and `exec` through.
	kubeletClient := certRequest{commonName: "kube-apiserver-kubelet-client", organizations: []string{"system:masters"}}
	return ca.issue(kubeletClient, filepath.Join(certDir, "kubelet-client.crt"), filepath.Join(certDir, "kubelet-client.key"))
}
