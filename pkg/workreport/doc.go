// Package workreport reads what a work agent reports on a ManifestWork: whether the work, and each of
// its manifests, is applied, available and healthy for the work's current generation, why not, what the
// agent fed back, and what was changed on the cluster and put back. The hub's AppConfig status and
// rollout, kubectl ferry's views, the fleet simulator and the agent's own metrics all judge a report
// with it, so that they never disagree.
//
// The entry points are WorkStatus (a work's own conditions), ReadManifest (one manifest's) and DriftOf
// (what was changed on the cluster and put back). WorkConditionTypes and ManifestConditionTypesRead are
// every condition type they read, and MessageRead the conditions whose message they read: what a cache
// of works must keep.
package workreport
