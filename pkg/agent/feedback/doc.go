// Package feedback evaluates a manifest's status feedback rules (spec.manifestConfigs[].feedbackRules of a
// ManifestWork) against the live object on the spoke and returns the values the agent reports in
// status.resourceStatus.manifests[].statusFeedback.values. It owns the well-known status table, the JSONPath
// evaluation and the mapping of results to Integer, String, Boolean and JsonRaw values, matching the Open
// Cluster Management work agent; it reads no cluster and writes no status.
package feedback
