package hub

import (
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// Labels and the annotation every rendered object carries (see v1alpha2).
const (
	LabelAppName      = v1alpha2.LabelAppName
	LabelComponent    = v1alpha2.LabelComponent
	LabelRevision     = v1alpha2.LabelRevision
	LabelResourceType = v1alpha2.LabelResourceType
	AnnotationAppGen  = v1alpha2.AnnotationAppGen

	ResourceTypeWorkload = v1alpha2.ResourceTypeWorkload
	ResourceTypeTrait    = v1alpha2.ResourceTypeTrait
)

// Labels on a ManifestWork naming the AppConfig it delivers (the API's, for the hub's readers).
const (
	LabelAppConfigNamespace = v1alpha2.LabelAppConfigNamespace
	LabelAppConfigName      = v1alpha2.LabelAppConfigName
)

// Labels on a preview ManifestWork naming the AppConfig it previews (see v1alpha2.AnnotationReportOnly).
const (
	LabelPreviewOfNamespace = v1alpha2.LabelPreviewOfNamespace
	LabelPreviewOfName      = v1alpha2.LabelPreviewOfName
)

// PreviewWorkName is the name of the preview ManifestWork of a report-only AppConfig on a cluster: never
// that of a work ManifestWorkName names.
func PreviewWorkName(app *v1alpha2.ApplicationConfiguration) string {
	return v1alpha2.PreviewWorkName(app.Namespace, app.Name)
}

// ManifestWorkName is the name of the ManifestWork delivering an AppConfig to a cluster: AppConfigs of
// different hub namespaces may share a name, so the namespace is part of it.
func ManifestWorkName(app *v1alpha2.ApplicationConfiguration) string {
	return v1alpha2.ManifestWorkName(app.Namespace, app.Name)
}

// appConfigOfWorkName is the AppConfig whose ManifestWorks have this name (see ManifestWorkName), if
// it is such a name. A namespace has no dots, so the first dot ends it.
func appConfigOfWorkName(name string) (types.NamespacedName, bool) {
	ns, app, ok := strings.Cut(name, ".")
	return types.NamespacedName{Namespace: ns, Name: app}, ok && ns != "" && app != ""
}
