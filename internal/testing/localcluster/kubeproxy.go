package localcluster

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/template"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// kubeProxyConfig is the node's KubeProxyConfiguration: iptables mode, as REAL-NODE.md found working.
// conntrack.maxPerCore 0 leaves the machine's nf_conntrack_max alone (kube-proxy would raise it, and
// the sysctl is not writable from every network namespace); localhostNodePorts off keeps
// route_localnet alone. The health endpoint tells when the first sync of the rules is done.
var kubeProxyConfig = template.Must(template.New("kube-proxy").Parse(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: {{.Kubeconfig}}
hostnameOverride: {{.NodeName}}
bindAddress: {{.NodeIP}}
clusterCIDR: {{.PodCIDR}}
healthzBindAddress: {{.Healthz}}
metricsBindAddress: ""
conntrack:
  maxPerCore: 0
iptables:
  localhostNodePorts: false
`))

// startKubeProxy starts kube-proxy and returns once it has written the Services' rules a first time.
func startKubeProxy(ctx context.Context, c *Cluster, binDir, nodeName string) (*component, error) {
	dir, kubeconfig, err := componentDir(c, "kube-proxy")
	if err != nil {
		return nil, err
	}
	healthz, err := freeLocalPort()
	if err != nil {
		return nil, err
	}
	var cfg strings.Builder
	err = kubeProxyConfig.Execute(&cfg, map[string]string{
		"Kubeconfig": kubeconfig, "NodeName": nodeName, "NodeIP": nodeIP.String(), "PodCIDR": podCIDR, "Healthz": healthz,
	})
	if err != nil {
		return nil, err
	}
	configFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configFile, []byte(cfg.String()), 0o600); err != nil {
		return nil, err
	}
	p, err := startComponent(c, binDir, "kube-proxy", []string{"--config=" + configFile, "--v=1"}, nil)
	if err != nil {
		return nil, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	err = wait.PollUntilContextCancel(waitCtx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := p.exitErr(); err != nil {
			return false, err
		}
		resp, err := client.Get("http://" + healthz + "/healthz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return p, fmt.Errorf("kube-proxy not healthy (rules synced) within a minute: %w (log in %s)", err, p.log)
	}
	return p, nil
}

// freeLocalPort returns a loopback address with a port that was free a moment ago.
func freeLocalPort() (string, error) {
	port, err := freePort("127.0.0.1")
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", port), nil
}

// freePort returns a TCP port of host that was free a moment ago.
func freePort(host string) (string, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", fmt.Errorf("find a free port on %s: %w", host, err)
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}
