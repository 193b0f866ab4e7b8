package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// A cluster with a real node has certificates envtest does not make. Its pods reach the API server
// through the `kubernetes` Service, so the serving certificate must name the Service's ClusterIP and
// DNS names besides the address the server binds; and the API server and the kubelet authenticate
// each other. One certificate authority of the cluster's own signs all of them, and the users'
// certificates too (nodeCAAuthn): kube-controller-manager signs the client certificates that
// CertificateSigningRequests ask for (an OCM registration agent's hub credential) with its key, so the
// API server must trust it for clients.

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
	certPEM, keyPEM, err := ca.sign(req)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(keyFile, keyPEM, 0o600)
}

// keyPEM is the authority's private key, PEM encoded, for kube-controller-manager's CSR signer.
func (ca *certAuthority) keyPEM() ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(ca.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// sign makes a certificate for req and its key, PEM encoded.
func (ca *certAuthority) sign(req certRequest) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
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
		return nil, nil, fmt.Errorf("sign %s: %w", req.commonName, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// nodeCAAuthn is the envtest authenticator of a cluster with a real node: the API server trusts the
// cluster's own authority for client certificates, and the users envtest provisions (its admin, AddUser)
// get certificates that authority signs. envtest's own authenticator keeps its authority's key in
// memory, where kube-controller-manager's CSR signer cannot have it.
type nodeCAAuthn struct {
	ca     *certAuthority
	caFile string
}

var _ envtest.Authn = (*nodeCAAuthn)(nil)

// Configure points the API server at the authority's certificate, which Start writes.
func (a *nodeCAAuthn) Configure(workDir string, args *envtest.Arguments) error {
	a.caFile = filepath.Join(workDir, "client-ca.crt")
	args.Set("client-ca-file", a.caFile)
	return nil
}

func (a *nodeCAAuthn) Start() error {
	if a.caFile == "" {
		return errors.New("client certificate authenticator started before it was configured")
	}
	return os.WriteFile(a.caFile, a.ca.certPEM, 0o600)
}

func (a *nodeCAAuthn) AddUser(user envtest.User, baseCfg *rest.Config) (*rest.Config, error) {
	certPEM, keyPEM, err := a.ca.sign(certRequest{commonName: user.Name, organizations: user.Groups})
	if err != nil {
		return nil, fmt.Errorf("client certificate of %s: %w", user.Name, err)
	}
	cfg := rest.CopyConfig(baseCfg)
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	return cfg, nil
}

func (a *nodeCAAuthn) Stop() error { return nil }

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
