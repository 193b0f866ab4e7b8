// Package render turns an OAM ApplicationConfiguration into what its clusters get, writing nothing:
// Render resolves every component entry (its revision, parameter values, traits, patch traits) into a
// workload and its traits, and BuildManifestWork turns those into the ManifestWork of every cluster
// of the application, whose spec SetSpecHash identifies. What a single cluster gets besides is package
// override's.
//
// ferry-hub renders an AppConfig from the Components and TraitDefinitions it caches (Input says what
// rendering needs of them).
package render
