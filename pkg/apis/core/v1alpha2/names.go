package v1alpha2

// What ferry-hub writes on the ManifestWorks it delivers an AppConfig with, and the condition an
// AppConfig's status opens with: what people's tools (kubectl ferry) read, without the hub's code.
const (
	// LabelAppConfigNamespace and LabelAppConfigName, on a ManifestWork (and on an AppConfig's
	// revisions), name the AppConfig it delivers.
	LabelAppConfigNamespace = "ferry.io/appconfig-namespace"
	LabelAppConfigName      = "ferry.io/appconfig-name"
	// AnnotationSpecHash, on a ManifestWork, identifies the spec the hub last wrote into it: the
	// revision of the application the work carries.
	AnnotationSpecHash = "ferry.io/spec-hash"
	// ConditionReady says whether the AppConfig is rendered and delivered to its clusters.
	ConditionReady = "Ready"
)

// ManifestWorkName is the name of the ManifestWork delivering the AppConfig name of namespace to a
// cluster: AppConfigs of different namespaces may share a name, so the namespace is part of it.
func ManifestWorkName(namespace, name string) string {
	return namespace + "." + name
}
