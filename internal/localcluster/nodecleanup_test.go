package localcluster

import (
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
