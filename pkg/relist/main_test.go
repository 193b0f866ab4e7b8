package relist

import (
	"os"
	"testing"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

// shared is one API server (etcd and kube-apiserver) for the package's tests, each in a namespace of
// its own.
var shared = &localcluster.Shared{Options: localcluster.Options{Hub: localcluster.ClusterSpec{Name: "hub"}}}

func TestMain(m *testing.M) {
	os.Exit(localcluster.RunShared(m, shared))
}
