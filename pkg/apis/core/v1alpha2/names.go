package v1alpha2

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// What ferry-hub writes on the ManifestWorks it delivers an AppConfig with, and the condition an
// AppConfig's status opens with: what people's tools (kubectl ferry) read, without the hub's code.
const (
	// LabelAppConfigNamespace and LabelAppConfigName, on a ManifestWork (and on an AppConfig's
	// revisions), name the AppConfig it delivers.
	LabelAppConfigNamespace = "ferry.io/appconfig-namespace"
	LabelAppConfigName      = "ferry.io/appconfig-name"
	// AnnotationSpecHash, on a ManifestWork, identifies the spec the hub last wrote into it: its
	// cluster's, with the overrides that select that cluster.
	AnnotationSpecHash = "ferry.io/spec-hash"
	// AnnotationRevisionHash, on a ManifestWork, identifies the revision of the application the work
	// carries, when it is not its spec hash: a revision with overrides is one for all its clusters,
	// rendered for each (WorkRevision).
	AnnotationRevisionHash = "ferry.io/revision-hash"
	// ConditionReady says whether the AppConfig is rendered and delivered to its clusters.
	ConditionReady = "Ready"
)

// Labels and the annotation every object ferry-hub renders carries: which application, component and
// revision it is of, whether it is a workload or a trait, and the AppConfig generation an apply-once
// strategy applies it at.
const (
	LabelAppName      = "app.oam.dev/name"
	LabelComponent    = "app.oam.dev/component"
	LabelRevision     = "app.oam.dev/revision"
	LabelResourceType = "app.oam.dev/resourceType"
	AnnotationAppGen  = "app.oam.dev/generation"

	ResourceTypeWorkload = "WORKLOAD"
	ResourceTypeTrait    = "TRAIT"
)

// Labels on the ControllerRevisions of a Component, which ferry-hub records for each spec it has had.
const (
	// LabelRevisionOfComponent names the Component a ControllerRevision is a revision of.
	LabelRevisionOfComponent = "controller.oam.dev/component"
	// LabelComponentSpecHash identifies the spec a revision holds (the hash of its JSON encoding), so
	// that an unchanged spec makes no new revision.
	LabelComponentSpecHash = "ferry.io/component-spec-hash"
)

// WorkRevision is the hash of the application revision a ManifestWork of ferry-hub carries, from its
// annotations.
func WorkRevision(annotations map[string]string) string {
	if r := annotations[AnnotationRevisionHash]; r != "" {
		return r
	}
	return annotations[AnnotationSpecHash]
}

// ManifestWorkName is the name of the ManifestWork delivering the AppConfig name of namespace to a
// cluster: AppConfigs of different namespaces may share a name, so the namespace is part of it.
func ManifestWorkName(namespace, name string) string {
	return namespace + "." + name
}

// Report-only delivery: an AppConfig annotated AnnotationReportOnly is delivered to no cluster; ferry-hub
// writes each of its clusters a preview instead, a ManifestWork that applies nothing and on which the
// cluster's agent reports what applying the AppConfig would change there (workreport.AnnotationReportDiff).
const (
	// AnnotationReportOnly, "true" on an AppConfig, has ferry-hub render it as always and deliver
	// nothing: its ManifestWorks are neither created, updated nor deleted (its clusters keep what they
	// run, a rollout does not move), and each cluster of its placement gets a preview work instead.
	// Removing it deletes the previews and delivers the spec.
	AnnotationReportOnly = "ferry.io/report-only"
	// LabelPreviewOfNamespace and LabelPreviewOfName, on a preview ManifestWork, name the AppConfig it
	// previews. They are not LabelAppConfigNamespace and LabelAppConfigName: whoever reads an
	// AppConfig's works by those (ferry-hub's summaries and rollout, kubectl ferry status, a person's
	// kubectl get -l) reads what is delivered, which a preview is not.
	LabelPreviewOfNamespace = "ferry.io/preview-of-namespace"
	LabelPreviewOfName      = "ferry.io/preview-of-name"
)

// ReportOnly reports whether annotations ask for an AppConfig to be delivered report only.
func ReportOnly(annotations map[string]string) bool {
	return annotations[AnnotationReportOnly] == "true"
}

// maxObjectName is the longest name of a ManifestWork (a DNS subdomain).
const maxObjectName = 253

// PreviewWorkName is the name of the preview ManifestWork of the AppConfig name of namespace on a
// cluster: "preview-<namespace>-<name, its dots as dashes>-<hash of namespace/name>". It has no dot, and
// every name ManifestWorkName makes has one (a namespace has none, so the first dot of those ends it):
// a preview's name is never that of a work that delivers. The hash tells apart AppConfigs whose names
// differ in a dot or a dash, or are cut to fit.
func PreviewWorkName(namespace, name string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	hash := hex.EncodeToString(sum[:5])
	readable := "preview-" + namespace + "-" + strings.ReplaceAll(name, ".", "-")
	return readable[:min(len(readable), maxObjectName-len(hash)-1)] + "-" + hash
}
