package relist

import (
	"os"
	"testing"

	clientfeatures "k8s.io/client-go/features"
)

func TestListThenWatchTurnsOffWatchListOnlyWhenTheUserDidNotChoose(t *testing.T) {
	if v, set := os.LookupEnv(watchListEnv); set {
		// The user's choice, which ListThenWatch keeps: restore it after the test.
		t.Cleanup(func() { os.Setenv(watchListEnv, v) })
		os.Unsetenv(watchListEnv)
	}
	other := clientfeatures.InformerResourceVersion
	before := clientfeatures.FeatureGates().Enabled(other)

	ListThenWatch()
	if clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		t.Errorf("WatchListClient is still on after ListThenWatch")
	}
	if got := clientfeatures.FeatureGates().Enabled(other); got != before {
		t.Errorf("%s changed from %v to %v: ListThenWatch must leave every other feature as it was", other, before, got)
	}
}
