package relist

import (
	"os"

	clientfeatures "k8s.io/client-go/features"
)

// watchListEnv is the variable through which client-go lets a user choose WatchListClient; a choice
// made there is kept.
const watchListEnv = "KUBE_FEATURE_" + string(clientfeatures.WatchListClient)

// ListThenWatch makes every informer of the process fill its cache with a paginated LIST and then
// WATCH from the list's resourceVersion, instead of client-go 1.35's default streaming "watch-list"
// (WatchListClient) — unless KUBE_FEATURE_WatchListClient is set, which wins.
//
// Why: kube-apiserver sends a watch-list's initial objects before it reads any new event for that
// watcher, and buffers at most 100 new events of a custom resource per watcher (its watch cache's
// channel size); when they do not fit, it closes the watch. The client then starts the whole
// watch-list again, from nothing. On a hub with 100,000 ManifestWorks, each about 4 KiB, the initial
// stream takes tens of seconds on a busy machine, and a fleet reporting more than a few events a
// second fills those 100 slots long before the end: the informer never fills again, and the
// controller stands still (measured with bench-fleet at 10,000 clusters; kubernetes/kubernetes#129197
// describes the same). A LIST is paginated and is not closed for slowness, and the WATCH after it
// replays only what changed since the list; if that replay is cut, the watch resumes from the last
// event received instead of from nothing, so every attempt makes progress. A LIST of a collection that
// large needs pages too (Paged).
//
// Call it before any client is used: client-go reads its feature gates once.
func ListThenWatch() {
	if _, chosen := os.LookupEnv(watchListEnv); chosen {
		return
	}
	clientfeatures.ReplaceFeatureGates(withoutWatchList{clientfeatures.FeatureGates()})
}

// withoutWatchList is client-go's feature gates with WatchListClient off.
type withoutWatchList struct{ clientfeatures.Gates }

func (g withoutWatchList) Enabled(f clientfeatures.Feature) bool {
	if f == clientfeatures.WatchListClient {
		return false
	}
	return g.Gates.Enabled(f)
}
