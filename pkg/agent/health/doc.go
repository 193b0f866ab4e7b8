// Package health gives each object the agent applied its health, as conditions of its manifest in
// the ManifestWork's status, and folds them into the work's conditions. The entry points are
// Evaluator.Conditions (one object: Progressing and Degraded from kstatus, Complete for Jobs and Pods
// as OCM's WellKnownConditions define it, and the manifest's conditionRules, which override a built-in
// verdict of the same type) and Aggregate (the work).
//
// Available keeps OCM's meaning, "the object exists"; health is what says whether it works.
package health
