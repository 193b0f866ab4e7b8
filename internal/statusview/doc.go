// Package statusview is what `kubectl ferry` shows. ForWork, ForAppConfig, ForClusters, ForRollout and
// ForRolloutHistory turn the objects read from the hub (ManifestWorks, an ApplicationConfiguration,
// ManagedClusters, an application's ControllerRevisions) into a small documented data model — Work,
// AppConfig, Clusters, Rollout, RolloutHistory — and Write prints it as a table for people or as JSON or
// YAML for scripts. ForAppConfigStatus builds the AppConfig view from the AppConfig's status alone, for
// a user who may not read ManifestWorks. The fleet views are FleetWorks (a line per ManifestWork,
// ForFleetWork) and FleetDrift (DriftedObjectsOf, ForFleetDrift); ForFleetWorksStatus and
// ForFleetDriftStatus build them from AppConfigs' status, for a user who may not list ManifestWorks.
// The verdicts a script waits for, Healthy and Rollout.Verdict, are computed here too. The package
// reads nothing from a cluster: the command fetches, this decides and renders.
package statusview
