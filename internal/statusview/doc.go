// Package statusview is what `kubectl ferry` shows. ForWork, ForAppConfig and ForClusters turn the
// objects read from the hub (ManifestWorks, an ApplicationConfiguration, ManagedClusters) into a small
// documented data model — Work, AppConfig, Clusters — and Write prints it as a table for people or as
// JSON or YAML for scripts. The verdict a script waits for, Healthy, is computed here too. The package
// reads nothing from a cluster: the command fetches, this decides and renders.
package statusview
