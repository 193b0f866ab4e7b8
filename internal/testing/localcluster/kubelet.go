package localcluster

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"text/template"
)

// kubeletPort is the kubelet's serving port (the API server's logs, exec and port-forward go there),
// the standard one: there is one real node per machine (lockRealNode).
const kubeletPort = 10250

// kubeletConfig is the node's KubeletConfiguration. What this kind of machine needs (REAL-NODE.md):
// the 1.35 kubelet refuses cgroup v1 unless failCgroupV1 is false; cgroupfs, not systemd; swap
// tolerated. Its own state — pods' volumes, plugins, checkpoints, logs — lives under the cluster's
// directory rather than /var/lib/kubelet and /var/log/pods. The API server authenticates to it with the
// client certificate the cluster's CA signed and is authorised through the API server's RBAC (webhook);
// nobody else gets in. Eviction and image garbage collection are set so that a nearly full disk of a
// development machine neither taints the node nor deletes the images a test imported, which can never
// be pulled back. The pods are synced every 10 s rather than every minute: a renewed Secret reaches its
// mounted volume within one sync period, and a test that renews one waits for that, not a minute and more.
var kubeletConfig = template.Must(template.New("kubelet").Parse(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: {{.NodeIP}}
port: {{.Port}}
readOnlyPort: 0
healthzPort: 0
tlsCertFile: {{.Dir}}/kubelet.crt
tlsPrivateKeyFile: {{.Dir}}/kubelet.key
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: {{.Dir}}/ca.crt
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://{{.ContainerdSocket}}
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
podLogsDir: {{.Dir}}/pod-logs
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
registerNode: true
evictionHard:
  memory.available: 1Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
syncFrequency: 10s
`))

// kubeletArgs writes the kubelet's configuration and certificates into dir and returns its command line.
func kubeletArgs(ca *certAuthority, dir, kubeconfig, nodeName, containerdSocket string) ([]string, error) {
	for _, sub := range []string{"root", "pod-logs"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca.certPEM, 0o600); err != nil {
		return nil, err
	}
	serving := certRequest{commonName: nodeName, server: true, ips: []net.IP{nodeIP}, dnsNames: []string{nodeName}}
	if err := ca.issue(serving, filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key")); err != nil {
		return nil, err
	}
	var cfg strings.Builder
	err := kubeletConfig.Execute(&cfg, map[string]any{
		"NodeIP": nodeIP.String(), "Port": kubeletPort, "Dir": dir, "ContainerdSocket": containerdSocket,
	})
	if err != nil {
		return nil, err
	}
	configFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configFile, []byte(cfg.String()), 0o600); err != nil {
		return nil, err
	}
	return []string{
		"--config=" + configFile,
		"--kubeconfig=" + kubeconfig,
		"--root-dir=" + filepath.Join(dir, "root"),
		"--cert-dir=" + filepath.Join(dir, "pki"),
		"--hostname-override=" + nodeName,
		"--node-ip=" + nodeIP.String(),
		"--v=1",
	}, nil
}
