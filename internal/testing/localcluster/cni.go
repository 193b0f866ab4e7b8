package localcluster

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// The real node's pod network: one bridge on the node with a gateway and masquerading (pods reach the
// node's addresses — the API server among them — and beyond), host-local addresses, and portmap for
// hostPorts. Its configuration lives in the cluster's directory, where containerd's CRI plugin is
// pointed (conf_dir), not in the machine's /etc/cni/net.d, and host-local keeps its leases there too.
const (
	// podBridge is the name of the pods' bridge interface; the node's clean-up deletes it.
	podBridge = "ferry-pods0"
	// podCIDR is the pods' address range.
	podCIDR = "10.88.0.0/16"
	// podNetwork names the CNI network; the bridge plugin names its masquerading rules after it.
	podNetwork = "ferry-localcluster"
)

// writeCNIConfig writes the network's configuration list into confDir, with host-local's leases in
// dataDir.
func writeCNIConfig(confDir, dataDir string) error {
	if err := os.MkdirAll(confDir, 0o700); err != nil {
		return err
	}
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       podNetwork,
		"plugins": []map[string]any{
			{
				"type":        "bridge",
				"bridge":      podBridge,
				"isGateway":   true,
				"ipMasq":      true,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": podCIDR}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": dataDir,
				},
			},
			{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(confDir, "10-ferry.conflist"), data, 0o600)
}
