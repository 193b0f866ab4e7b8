package e2e

import (
	"flag"
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// allAtOnce is how many tests run at once unless -parallel says: each brings its own clusters, and most
// of an end-to-end test is waiting (an outage lasting, a lease running out, a rollout holding), so
// GOMAXPROCS at a time left a 3-minute outage test waiting for the CPU-bound ones before it could
// start its waits.
const allAtOnce = "8"

func TestMain(m *testing.M) {
	flag.Parse()
	parallelGiven := false
	flag.Visit(func(f *flag.Flag) { parallelGiven = parallelGiven || f.Name == "test.parallel" })
	if !parallelGiven {
		if err := flag.Set("test.parallel", allAtOnce); err != nil {
			panic(err)
		}
	}
	// envtest's own progress lines, not ours to read; set once, before the tests run in parallel.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}
