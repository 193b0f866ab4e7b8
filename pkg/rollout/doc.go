// Package rollout decides how a new revision of an application reaches its clusters. The entry point is
// Decide: a pure function of the rollout's spec (v1alpha2.Rollout), the revision wanted and the stable
// one, each cluster's state as read from the API (the revision its work carries, whether the agent's
// report is about that very work, its health and since when) and the clock. It returns which revision
// each cluster's work should carry now, the phase, the stage, the failures and when to look again — it
// writes nothing, so that the hub can be restarted at any point and decide the same from the API alone,
// and so that the rules are tested as a table.
//
// The rules follow OCM's rollout helper (open-cluster-management.io/sdk-go, cluster/v1alpha1
// rollout.go) where it is right: clusters taken in name order, percentages rounded up, a cluster still
// soaking (minSuccessTime) or failed occupies a slot of maxConcurrency, no new cluster once maxFailures is
// exceeded. Ferry differs on purpose: success is the agents' health verdict (kstatus) with no user rule,
// and only a report about the work's current generation counts; a Degraded cluster has failed whether or
// not it is still Progressing (OCM's Progressive rollout of a ManifestWorkReplicaSet counts a work that
// is Degraded but no longer Progressing as succeeded); a halt is remembered, and can pause or roll back.
package rollout
