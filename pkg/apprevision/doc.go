// Package apprevision is an application revision as ferry-hub records it: the ControllerRevision of an
// AppConfig holding the spec of its ManifestWorks and the overrides that change it for some clusters
// (Data, read back by Decode). ferry-hub writes and delivers revisions; kubectl ferry reads them to show
// what a cluster gets, with package override.
package apprevision
