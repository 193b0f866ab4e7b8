package v1alpha2

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
