// Package agent is the spoke work agent: it watches the ManifestWorks in its cluster's namespace on the
// hub, applies their manifests to the spoke through package apply, tracks what it applied in an
// AppliedManifestWork (and garbage-collects what was removed), writes per-manifest conditions and
// status feedback back to the hub, and records Events on the spoke objects it acts on (events.go).
// Entry point: Start, with a resolved Config; the process around it (flags, clients, leader election,
// servers) is package process.
package agent
