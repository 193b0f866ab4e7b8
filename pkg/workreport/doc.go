// Package workreport reads what a work agent reports on a ManifestWork: whether the work, and each of
// its manifests, is applied, available and healthy for the work's current generation, why not, and
// what the agent fed back. The hub's AppConfig status and rollout, kubectl ferry's views, the fleet
// simulator and the agent's own metrics all judge a report with it, so that they never disagree.
//
// The entry points are WorkStatus (a work's own conditions) and ReadManifest (one manifest's).
// WorkConditionTypes and ManifestConditionTypes are every condition type they read: what a cache of
// works must keep.
package workreport
