package fleetsim

import (
	"os"
	"testing"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

// shared is one hub (etcd and kube-apiserver with the hub's CRDs) for the package's tests, each of
// which registers clusters of its own prefix. No spokes: the agents are simulated.
var shared = &localcluster.Shared{Options: localcluster.Options{Hub: localcluster.ClusterSpec{Name: "hub"}}}

func TestMain(m *testing.M) {
	os.Exit(localcluster.RunShared(m, shared))
}
