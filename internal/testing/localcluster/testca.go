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

// NewTestCA makes an authority named name and writes its certificate to ca.crt in dir.
func NewTestCA(dir, name string) (*TestCA, error) {
	ca, err := newCertAuthority(name)
	if err != nil {
		return nil, fmt.Errorf("certificate authority %s: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca.certPEM, 0o600); err != nil {
		return nil, err
	}
	return &TestCA{ca: ca, dir: dir}, nil
}

// CAFile is the authority's certificate, PEM encoded.
func (c *TestCA) CAFile() string { return filepath.Join(c.dir, "ca.crt") }

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
