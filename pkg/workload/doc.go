// Package workload reads the manifests of a ManifestWork's workload as a hub sent them: Decode turns each
// into an object or an error of its own, Normalize checks that an object names what to apply and strips
// the fields the API server owns, and Hash identifies a manifest's content. It is pure (no clients), so
// the agent and the apply engine share one reading of a manifest and the fuzz targets that take whatever
// a hub could send build a small program.
package workload
