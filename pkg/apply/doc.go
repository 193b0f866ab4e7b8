// Package apply is Ferry's apply engine: it applies one Kubernetes object to a cluster under an update
// strategy (Update, CreateOnly, ServerSideApply, ReadOnly, ApplyOnce, ApplyOnceForce), one file per
// strategy behind one small interface, with the ordering and last-applied handling they share (a
// manifest's checks and hash are package workload's).
// It knows nothing about ManifestWorks or the hub.
package apply
