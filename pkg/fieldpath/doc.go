// Package fieldpath writes values at the field paths OAM Components name their parameters by, e.g.
// spec.template.spec.containers[0].image or metadata.labels[app.oam.dev/tier]: Set is the entry point.
// Rendering sets parameter values and workload references with it, and overrides a cluster's parameter
// values.
package fieldpath
