// Package apply is Ferry's apply engine: it applies one Kubernetes object to a cluster under an update
// strategy (Update, CreateOnly, ServerSideApply, ReadOnly, ApplyOnce, ApplyOnceForce), one file per
// strategy behind one small interface, with the ordering and last-applied handling they share (a
// manifest's checks and hash are package workload's). Asked to (Options.ReportDiff), ReadOnly also says
// what applying the manifest would change (Result.Diff, in the terms of package workreport's WouldChange
// condition), for a report-only delivery.
// It knows nothing about ManifestWorks or the hub.
package apply
