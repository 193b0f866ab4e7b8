package localcluster

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// TestCA is a certificate authority of a test's own, for servers it runs beside its clusters (OCM's gRPC
// server) and their clients: files under a directory of the test's.
type TestCA struct {
	ca  *certAuthority
	dir string
}

// NewTestCA makes an authority named name and writes its certificate to ca.crt in dir, and its key to
// ca.key: a signer such as OCM's hub registration controller, which signs the client certificates of
// agents registered over gRPC, needs both.
func NewTestCA(dir, name string) (*TestCA, error) {
	ca, err := newCertAuthority(name)
	if err != nil {
		return nil, fmt.Errorf("certificate authority %s: %w", name, err)
	}
	key, err := ca.keyPEM()
	if err != nil {
		return nil, fmt.Errorf("certificate authority %s: %w", name, err)
	}
	c := &TestCA{ca: ca, dir: dir}
	if err := os.WriteFile(c.CAFile(), ca.certPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.KeyFile(), key, 0o600); err != nil {
		return nil, err
	}
	return c, nil
}

// CAFile is the authority's certificate, PEM encoded.
func (c *TestCA) CAFile() string { return filepath.Join(c.dir, "ca.crt") }

// KeyFile is the authority's private key, PEM encoded.
func (c *TestCA) KeyFile() string { return filepath.Join(c.dir, "ca.key") }

// IssueServer writes a serving certificate for ips and its key, as name.crt and name.key.
func (c *TestCA) IssueServer(name string, ips ...net.IP) (certFile, keyFile string, err error) {
	return c.issue(name, certRequest{commonName: name, ips: ips, server: true})
}

// IssueClient writes a client certificate of user in groups (its organizations) and its key, as
// name.crt and name.key.
func (c *TestCA) IssueClient(name, user string, groups ...string) (certFile, keyFile string, err error) {
	return c.issue(name, certRequest{commonName: user, organizations: groups})
}

func (c *TestCA) issue(name string, req certRequest) (certFile, keyFile string, err error) {
	certFile, keyFile = filepath.Join(c.dir, name+".crt"), filepath.Join(c.dir, name+".key")
	if err := c.ca.issue(req, certFile, keyFile); err != nil {
		return "", "", fmt.Errorf("issue %s: %w", name, err)
	}
	return certFile, keyFile, nil
}
