// Package apply is Ferry's apply engine: it applies one Kubernetes object to a cluster under an update
// strategy (Update, CreateOnly, ServerSideApply, ReadOnly, ApplyOnce, ApplyOnceForce), one file per
// strategy behind one small interface, with the ordering, hashing and last-applied handling they share.
// It knows nothing about ManifestWorks or the hub.
package apply
