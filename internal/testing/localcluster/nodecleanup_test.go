package localcluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestNodeChainsRemoval(t *testing.T) {
	saved := strings.Join([]string{
		"*nat",
		":PREROUTING ACCEPT [0:0]",
		":POSTROUTING ACCEPT [0:0]",
		":DOCKER - [0:0]",
		":KUBE-SERVICES - [0:0]",
		":KUBE-KUBELET-CANARY - [0:0]",
		":CNI-0a1b2c3d4e5f - [0:0]",
		":CNI-HOSTPORT-DNAT - [0:0]",
		`-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`,
		"-A PREROUTING -j DOCKER",
		`-A POSTROUTING -s 10.88.0.4/32 -m comment --comment "name: \"ferry-localcluster\" id: \"abc\"" -j CNI-0a1b2c3d4e5f`,
		`-A POSTROUTING -s 172.17.0.0/16 -m comment --comment "name: \"podman\" id: \"def\"" -j CNI-ffffffffffff`,
		`-A CNI-0a1b2c3d4e5f -d 10.88.0.0/16 -m comment --comment "name: \"ferry-localcluster\" id: \"abc\"" -j ACCEPT`,
		"-A KUBE-SERVICES -d 10.0.0.1/32 -j KUBE-SVC-NPX46M4PTMTKRN6Y",
		"COMMIT",
	}, "\n")
	got := nodeChainsRemoval(saved)
	want := strings.Join([]string{
		`-D PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`,
		`-D POSTROUTING -s 10.88.0.4/32 -m comment --comment "name: \"ferry-localcluster\" id: \"abc\"" -j CNI-0a1b2c3d4e5f`,
		"-F CNI-0a1b2c3d4e5f",
		"-F KUBE-KUBELET-CANARY",
		"-F KUBE-SERVICES",
		"-X CNI-0a1b2c3d4e5f",
		"-X KUBE-KUBELET-CANARY",
		"-X KUBE-SERVICES",
		"",
	}, "\n")
	if got != want {
		t.Errorf("removal script:\n%s\nwant:\n%s", got, want)
	}
	if got := nodeChainsRemoval("*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j DOCKER\nCOMMIT\n"); got != "" {
		t.Errorf("a table without the node's chains gives %q, want nothing", got)
	}
}

// A drain that failed halfway through a sandbox's set-up once left loopback results without their bridge
// result; cleanup must find a cluster's results by where their network namespace lives, and leave
// another runtime's alone.
func TestOwnedCNIResults(t *testing.T) {
	results := t.TempDir()
	clusterDir := "/tmp/ferry-localcluster-1/hub"
	loopback := func(netns string) string {
		return `{"kind":"cniCacheV1","containerId":"abc","ifName":"lo","networkName":"cni-loopback",` +
			`"result":{"cniVersion":"0.3.1","interfaces":[{"name":"lo","mac":"00:00:00:00:00:00","sandbox":"` + netns + `"}]}}`
	}
	files := map[string]string{
		podNetwork + "-abc-eth0":     `{"kind":"cniCacheV1"}`,
		"cni-loopback-abc-lo":        loopback(clusterDir + "/node/containerd/state/io.containerd.grpc.v1.cri/netns/cni-1"),
		"cni-loopback-orphan-lo":     loopback(clusterDir + "/node/containerd/state/io.containerd.grpc.v1.cri/netns/cni-2"),
		"cni-loopback-other-lo":      loopback("/var/run/netns/cni-3"),
		"cni-loopback-neighbour-lo":  loopback("/tmp/ferry-localcluster-1/hub2/node/netns/cni-4"),
		"other-network-xyz-eth0":     `{"kind":"cniCacheV1","result":{"interfaces":[{"name":"eth0","sandbox":"/proc/1/ns/net"}]}}`,
		"cni-loopback-unreadable-lo": `not json`,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(results, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, p := range ownedCNIResults(results, clusterDir) {
		got = append(got, filepath.Base(p))
	}
	want := []string{podNetwork + "-abc-eth0", "cni-loopback-abc-lo", "cni-loopback-orphan-lo"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ownedCNIResults() = %q, want %q", got, want)
	}
}
