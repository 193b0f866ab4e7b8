// Package relist makes the informers of Ferry's processes fill their caches in a way that finishes on
// a busy API server with a large collection: ListThenWatch (called first thing by ferry-hub,
// ferry-agent and bench-fleet) has every informer fill by LIST and then WATCH, and NewInformer (for a
// controller-runtime cache) or Paged (for an informer built by hand) splits each LIST into pages.
package relist
