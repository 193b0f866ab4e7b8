package e2e

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

func TestMain(m *testing.M) {
	// envtest's own progress lines, not ours to read; set once, before the tests run in parallel.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}
