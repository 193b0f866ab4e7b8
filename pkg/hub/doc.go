// Package hub holds the hub controllers: Component revisions, rendering of ApplicationConfigurations
// (parameters, traits, patch traits, apply-once stamps), placement onto managed clusters, one
// ManifestWork per application and cluster — each application revision recorded, and brought to the
// clusters stage by stage under spec.rollout (rollout.go, deciding with package rollout) — and the
// aggregation of ManifestWork status back into the ApplicationConfiguration; an AppConfig annotated
// ferry.io/report-only gets previews in place of its works (preview.go). The entry point is
// SetupWithManager (or Run).
package hub
