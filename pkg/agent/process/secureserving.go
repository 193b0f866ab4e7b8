package process

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"

	"k8s.io/client-go/util/cert"
	cliflag "k8s.io/component-base/cli/flag"
)

// DefaultOCMListen is where OCM's work agent serves its health, and so where the klusterlet's probes
// look: ferry-agent serves there too when started with OCM's command line.
const DefaultOCMListen = ":8443"

// servingTLS is the TLS configuration of the --listen server, without its certificate.
func (o *Options) servingTLS() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.TLSMinVersion != "" {
		v, err := cliflag.TLSVersion(o.TLSMinVersion)
		if err != nil {
			return nil, fmt.Errorf("--%s %q: %w", flagTLSMinVersion, o.TLSMinVersion, err)
		}
		cfg.MinVersion = v
	}
	if len(o.TLSCipherSuites) > 0 {
		suites, err := cliflag.TLSCipherSuites(o.TLSCipherSuites)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", flagTLSCipherSuites, err)
		}
		cfg.CipherSuites = suites
	}
	return cfg, nil
}

// serveTLS serves h on addr over HTTPS with a self-signed certificate made now, as OCM's agents do
// when given none: probes do not verify it, and nothing else is served there.
func serveTLS(ctx context.Context, addr string, cfg *tls.Config, h http.Handler) error {
	if addr == "" || addr == "0" {
		return nil
	}
	host, err := hostOf(addr)
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		return fmt.Errorf("make a serving certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("load the serving certificate: %w", err)
	}
	cfg = cfg.Clone()
	cfg.Certificates = []tls.Certificate{pair}
	return serveOn(ctx, addr, cfg, h)
}

// hostOf is the name the certificate is made for: the address's host, else localhost.
func hostOf(addr string) (string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		return "localhost", nil
	}
	return host, nil
}
