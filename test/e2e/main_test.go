package e2e

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

// allAtOnce is how many tests run at once unless -parallel says: each brings its own clusters, and most
// of an end-to-end test is waiting (an outage lasting, a lease running out, a rollout holding), so
// GOMAXPROCS at a time left a 3-minute outage test waiting for the CPU-bound ones before it could
// start its waits.
const allAtOnce = 8

func TestMain(m *testing.M) {
	localcluster.RunManyAtOnce(allAtOnce)
	// envtest's own progress lines, not ours to read; set once, before the tests run in parallel.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}
