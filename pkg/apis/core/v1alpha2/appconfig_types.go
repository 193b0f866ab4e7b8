package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ApplicationConfigurationSpec is an application: component instances with their parameter values and
// traits, and the clusters they are delivered to.
type ApplicationConfigurationSpec struct {
	// Components are the component instances of the application.
	// +optional
	Components []ApplicationConfigurationComponent `json:"components,omitempty"`

	// Placement chooses the managed clusters the application is delivered to, one ManifestWork each.
	// It is Ferry's extension of the OAM API; an AppConfig without it is delivered to no cluster.
	// +optional
	Placement *Placement `json:"placement,omitempty"`

	// Executor names the ServiceAccount, on each managed cluster, that the agents hold the
	// application to: it may do there no more than that ServiceAccount may (OCM's ManifestWork
	// spec.executor, copied into every ManifestWork of the application). Naming one needs verb
	// execute-as on applicationconfigurations named after it (deploy/hub's admission policy).
	// Ferry's extension of the OAM API.
	// +optional
	Executor *Executor `json:"executor,omitempty"`

	// Rollout brings a new revision of the application to its clusters in stages, each gated on the
	// health the agents report, with pause, approval and automatic rollback. Without it a new revision
	// reaches every cluster at once. Ferry's extension of the OAM API.
	// +optional
	Rollout *Rollout `json:"rollout,omitempty"`

	// Overrides change what some of the placement's clusters get, in order: a later entry applies
	// over what the earlier ones made. They are part of the application's revision: an edit of them
	// rolls out under spec.rollout like any other change, and a rollback restores them. Values may
	// be taken from the cluster itself (see Override). Ferry's extension of the OAM API.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Overrides []Override `json:"overrides,omitempty"`
}

// Override changes, for the clusters it selects among the placement's, the objects rendered for them.
// With none of clusters, clusterSelector and decisionGroups it selects every cluster; with several, a
// cluster any of them takes.
//
// Every string of its parameter values, traits, image, labels, annotations and patches may take values
// from the target cluster (but not the names of what a trait is: its apiVersion, kind, name, namespace):
// ${cluster.name}, ${cluster.labels[KEY]}, ${cluster.annotations[KEY]} and ${cluster.claims[NAME]} (a
// ClusterClaim the cluster reports in its ManagedCluster's status.clusterClaims, e.g.
// region.open-cluster-management.io); $${ is a literal ${. A fact the cluster does not have is an error
// for that cluster, never an empty string.
type Override struct {
	// Name of the entry, unique in the AppConfig: conditions and kubectl ferry name it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// Clusters by name.
	// +optional
	// +listType=set
	Clusters []string `json:"clusters,omitempty"`

	// ClusterSelector takes the clusters whose labels match.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`

	// DecisionGroups takes, when the application is placed by an OCM Placement, the clusters of these
	// decision groups, each named by its name or its index (as in a rollout stage).
	// +optional
	// +listType=set
	DecisionGroups []string `json:"decisionGroups,omitempty"`

	// Components change entries of spec.components for the selected clusters, as if the AppConfig
	// said so for them: a parameter value replaces the entry's value of the same name (or is added),
	// a trait replaces the entry's trait of the same kind (or is added). They apply before the
	// image, labels, annotations and patches of the same entry. What changes the component's
	// revision for every cluster — a patch trait, a revision-enabled trait, an inline WorkloadPatch —
	// belongs in spec.components and is refused here.
	// +optional
	// +listType=map
	// +listMapKey=componentName
	Components []ComponentOverride `json:"components,omitempty"`

	// Image changes the image of every container (and init container) of a component's workload:
	// its registry, repository or tag, each one set replacing that part only.
	// +optional
	Image *ImageOverride `json:"image,omitempty"`

	// Labels are set on every object rendered for the selected clusters.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations are set on every object rendered for the selected clusters.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// Patches change the rendered objects they target, in order.
	// +optional
	Patches []ObjectPatch `json:"patches,omitempty"`
}

// ComponentOverride changes one entry of spec.components for the clusters an override selects.
type ComponentOverride struct {
	// ComponentName is the component of the entry: its componentName, or the component whose
	// revision its revisionName pins.
	// +kubebuilder:validation:MinLength=1
	ComponentName string `json:"componentName"`

	// ParameterValues replace the entry's values of the same names, or are added; each must be a
	// parameter of the component.
	// +optional
	// +listType=map
	// +listMapKey=name
	ParameterValues []ComponentParameterValue `json:"parameterValues,omitempty"`

	// Traits replace the entry's trait of the same apiVersion group and kind (taking its name unless
	// they name themselves), or are added beside the others.
	// +optional
	Traits []ComponentTrait `json:"traits,omitempty"`
}

// ImageOverride changes parts of the images of a component's containers.
//
// +kubebuilder:validation:XValidation:rule="has(self.registry) || has(self.repository) || has(self.tag)",message="set at least one of registry, repository and tag"
type ImageOverride struct {
	// Component whose workload's containers change; empty: every component's.
	// +optional
	Component string `json:"component,omitempty"`

	// Registry replaces the registry host (and port) of each image, e.g. eu.gcr.io; an image without
	// one (a Docker Hub name) gains it, an official image's name as library/NAME, as registry mirrors
	// keep it (nginx:1 becomes eu.gcr.io/library/nginx:1).
	// +optional
	Registry string `json:"registry,omitempty"`

	// Repository replaces the path of each image after the registry, e.g. team/web.
	// +optional
	Repository string `json:"repository,omitempty"`

	// Tag replaces the tag (and drops a digest) of each image.
	// +optional
	Tag string `json:"tag,omitempty"`
}

// ObjectPatch is a patch of the rendered objects it targets: a JSON merge patch (RFC 7386), a JSON
// patch (RFC 6902), or both, the merge patch first.
//
// A target and at least one of mergePatch and jsonPatch (the merge patch is schemaless, out of reach of
// a CEL rule):
// +kubebuilder:validation:MinProperties=2
type ObjectPatch struct {
	// Target selects the rendered objects the patch applies to.
	Target ObjectTarget `json:"target"`

	// MergePatch is merged into each target (RFC 7386: null removes a field).
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	MergePatch *runtime.RawExtension `json:"mergePatch,omitempty"`

	// JSONPatch operations applied to each target in order (RFC 6902). A path that does not exist
	// for replace, remove or test is an error, never skipped.
	// +optional
	JSONPatch []JSONPatchOperation `json:"jsonPatch,omitempty"`
}

// ObjectTarget selects rendered objects by kind, and optionally apiVersion and name. A target that
// selects no object rendered for the cluster is an error: the object is not where the entry thinks.
type ObjectTarget struct {
	// APIVersion of the objects, e.g. apps/v1; empty: any.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the objects, e.g. Deployment.
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`

	// Name of the object as rendered; empty: every object of the kind.
	// +optional
	Name string `json:"name,omitempty"`
}

// JSONPatchOperation is one operation of an RFC 6902 JSON patch.
type JSONPatchOperation struct {
	// +kubebuilder:validation:Enum=add;remove;replace;move;copy;test
	Op string `json:"op"`

	// Path is a JSON pointer (RFC 6901) into the object.
	Path string `json:"path"`

	// From is the source of move and copy.
	// +optional
	From string `json:"from,omitempty"`

	// Value of add, replace and test: any JSON value.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	Value *runtime.RawExtension `json:"value,omitempty"`
}

// Executor is the identity a work agent applies an application as: the shape of OCM's
// ManifestWorkExecutor.
type Executor struct {
	Subject ExecutorSubject `json:"subject"`
}

// ExecutorSubject is the executor's identity.
type ExecutorSubject struct {
	// Type of the subject; ServiceAccount is the only one.
	// +kubebuilder:validation:Enum=ServiceAccount
	Type string `json:"type"`

	// ServiceAccount on the managed cluster.
	ServiceAccount *ExecutorServiceAccount `json:"serviceAccount,omitempty"`
}

// ExecutorServiceAccount names a ServiceAccount on the managed cluster.
type ExecutorServiceAccount struct {
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// ApplicationConfigurationComponent instantiates one Component, either following its latest revision
// (componentName) or pinned to one revision (revisionName, <component>-v<N>).
//
// +kubebuilder:validation:XValidation:rule="has(self.componentName) != has(self.revisionName)",message="set exactly one of componentName and revisionName"
type ApplicationConfigurationComponent struct {
	// ComponentName follows the component's latest revision.
	// +optional
	ComponentName string `json:"componentName,omitempty"`

	// RevisionName pins a revision of a component, e.g. "frontend-v1"; a later change of the component
	// does not change what is delivered.
	// +optional
	RevisionName string `json:"revisionName,omitempty"`

	// ParameterValues set the component's parameters.
	// +optional
	// +listType=map
	// +listMapKey=name
	ParameterValues []ComponentParameterValue `json:"parameterValues,omitempty"`

	// Traits attached to this component instance.
	// +optional
	Traits []ComponentTrait `json:"traits,omitempty"`

	// UpdateStrategy is how agents apply this component's workload on the clusters; empty follows the
	// hub's --apply-once-only setting (off: Update, on: ApplyOnce, force: ApplyOnceForce). Ferry's
	// extension of the OAM API.
	// +optional
	UpdateStrategy UpdateStrategy `json:"updateStrategy,omitempty"`
}

// UpdateStrategy names a ManifestWork update strategy.
// +kubebuilder:validation:Enum=Update;CreateOnly;ServerSideApply;ReadOnly;ApplyOnce;ApplyOnceForce
type UpdateStrategy string

// ComponentParameterValue is the value of one component parameter.
type ComponentParameterValue struct {
	// Name of the parameter, as the Component declares it.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Value is any JSON value: a string, a number, a boolean, a list or an object. A RawExtension (not
	// a string) so that a number stays a number when written into the workload.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	Value runtime.RawExtension `json:"value"`
}

// ComponentTrait is one trait of a component instance.
type ComponentTrait struct {
	// Trait is the trait object, e.g. a ManualScalerTrait; its kind's TraitDefinition says how it is
	// rendered.
	// +kubebuilder:validation:EmbeddedResource
	// +kubebuilder:pruning:PreserveUnknownFields
	Trait runtime.RawExtension `json:"trait"`

	// UpdateStrategy is how agents apply this trait; empty follows the hub's --apply-once-only
	// setting. Ferry's extension of the OAM API.
	// +optional
	UpdateStrategy UpdateStrategy `json:"updateStrategy,omitempty"`
}

// Placement names the target clusters in exactly one of three ways.
//
// +kubebuilder:validation:XValidation:rule="[has(self.clusters), has(self.clusterSelector), has(self.placementRef)].filter(x, x).size() == 1",message="set exactly one of clusters, clusterSelector and placementRef"
type Placement struct {
	// Clusters are ManagedCluster names. Names without a ManagedCluster get no work until one exists.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +listType=set
	Clusters []string `json:"clusters,omitempty"`

	// ClusterSelector selects ManagedClusters by their labels.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`

	// PlacementRef names an Open Cluster Management Placement in the AppConfig's namespace; its
	// PlacementDecisions list the clusters.
	// +optional
	PlacementRef *PlacementRef `json:"placementRef,omitempty"`
}

// PlacementRef names an OCM Placement (cluster.open-cluster-management.io/v1beta1).
type PlacementRef struct {
	// Name of the Placement.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// ApplicationConfigurationStatus is what the hub rendered and what the clusters report.
type ApplicationConfigurationStatus struct {
	// ObservedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions of the application as a whole, e.g. whether it rendered and is available everywhere.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Workloads are the rendered workloads, one per component instance, with their traits.
	// +optional
	Workloads []WorkloadStatus `json:"workloads,omitempty"`

	// Clusters are the target clusters that are not fine (not applied, not available or not healthy
	// yet), at most MaxClustersListed of them by name, each with its manifests that are not fine. A
	// cluster where everything is fine is counted in the summary and not listed: the status stays small
	// at any fleet size, and is written only when the summary or this list changes. Every cluster's
	// report stays on its ManifestWork; `kubectl ferry status appconfig` shows them all.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=20
	Clusters []ClusterStatus `json:"clusters,omitempty"`

	// OmittedClusters counts the clusters that are not fine beyond those listed in clusters.
	// +optional
	OmittedClusters int32 `json:"omittedClusters,omitempty"`

	// Summary counts the clusters; `kubectl get` prints it.
	// +optional
	Summary *Summary `json:"summary,omitempty"`

	// Rollout is where the rollout of spec.rollout stands; absent without spec.rollout.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`

	// Placement is where the placement reached: the clusters the application is delivered to, and
	// those its placement names that no ManagedClusterSet bound to the AppConfig's namespace holds.
	// It is what a user who may read only her own namespace sees of her clusters.
	// +optional
	Placement *PlacementStatus `json:"placement,omitempty"`

	// Drift counts the objects of the application that were changed on their clusters and put back by
	// the clusters' agents, for the revision each cluster was delivered, and names the latest few.
	// Absent while nothing drifted: a steady fleet's status carries nothing of it.
	// +optional
	Drift *DriftStatus `json:"drift,omitempty"`

	// Diff is what applying the spec would change on the clusters, while the AppConfig is delivered
	// report only (annotation ferry.io/report-only): the agents' reports on the previews, counted, and
	// the first few objects named. Absent when the AppConfig is delivered.
	// +optional
	Diff *DiffStatus `json:"diff,omitempty"`
}

// PlacementStatus is where an AppConfig's placement reached, bounded like the rest of the status.
type PlacementStatus struct {
	// Clusters are the clusters the application is delivered to, the first MaxClustersListed by name;
	// summary.clusters counts them all.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=20
	Clusters []string `json:"clusters,omitempty"`

	// Refused are the clusters the placement names that are in no ManagedClusterSet bound to the
	// AppConfig's namespace by a ManagedClusterSetBinding, the first MaxClustersListed by name. They
	// get no ManifestWork, unless the hub only audits its bindings (see ClusterSetBindingsAudit).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=20
	Refused []string `json:"refused,omitempty"`

	// RefusedClusters counts every refused cluster.
	// +optional
	RefusedClusters int32 `json:"refusedClusters,omitempty"`

	// ClusterSetBindings is how the hub held the placement to the namespace's bindings: Enforce
	// (refused clusters get no work) or Audit (they are only reported).
	// +optional
	ClusterSetBindings ClusterSetBindingsMode `json:"clusterSetBindings,omitempty"`
}

// ClusterSetBindingsMode is how ferry-hub holds an AppConfig's placement to the ManagedClusterSets
// bound to its namespace, as Pod Security admission's modes: enforced, or only audited.
// +kubebuilder:validation:Enum=Enforce;Audit
type ClusterSetBindingsMode string

const (
	// ClusterSetBindingsEnforce delivers only to clusters of sets bound to the AppConfig's namespace.
	ClusterSetBindingsEnforce ClusterSetBindingsMode = "Enforce"
	// ClusterSetBindingsAudit delivers to every cluster the placement names and reports those the
	// bindings would refuse: the step of an upgrade before enforcing.
	ClusterSetBindingsAudit ClusterSetBindingsMode = "Audit"
)

// The condition an AppConfig's status carries about its bindings, and its reasons.
const (
	// ConditionClustersBound is True when every cluster the placement names is in a ManagedClusterSet
	// bound to the AppConfig's namespace.
	ConditionClustersBound = "ClustersBound"
	// ReasonAllClustersBound: every cluster the placement names is allowed.
	ReasonAllClustersBound = "AllClustersBound"
	// ReasonClustersNotBound: some clusters are refused and get no work (also Ready's reason when the
	// placement reaches none).
	ReasonClustersNotBound = "ClustersNotBound"
	// ReasonClustersNotBoundAudit: some clusters would be refused; the hub only audits, and delivers.
	ReasonClustersNotBoundAudit = "ClustersNotBoundAudit"
)

const (
	// MaxClustersListed is how many clusters that are not fine an AppConfig's status lists.
	MaxClustersListed = 20
	// MaxManifestsListed is how many manifests that are not fine a listed cluster shows.
	MaxManifestsListed = 5
	// MaxMessageLength is the longest message of a listed manifest; a longer one is cut, and the
	// whole message stays on the ManifestWork.
	MaxMessageLength = 512
)

// WorkloadStatus is the workload rendered for one component instance.
type WorkloadStatus struct {
	// ComponentName is the component the workload was rendered from.
	ComponentName string `json:"componentName"`
	// ComponentRevisionName is the revision rendered, <component>-v<N>.
	// +optional
	ComponentRevisionName string `json:"componentRevisionName,omitempty"`
	// Reference is the rendered workload.
	Reference TypedReference `json:"workloadRef"`
	// Traits are the traits rendered for the workload.
	// +optional
	Traits []WorkloadTrait `json:"traits,omitempty"`
	// PatchTraits are the patch-trait objects the hub created for the workload, in the
	// AppConfig's namespace on the hub; their patches are merged into the workload. Inline WorkloadPatch
	// traits have no object and are not listed.
	// +optional
	PatchTraits []WorkloadTrait `json:"patchTraits,omitempty"`
}

// WorkloadTrait is one rendered trait.
type WorkloadTrait struct {
	// Reference is the rendered trait object.
	Reference TypedReference `json:"traitRef"`
}

// TypedReference names an object of a given kind in the AppConfig's namespace.
type TypedReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
}

// ClusterStatus is what one target cluster reports of the application's ManifestWork.
//
// Applied and Available are condition statuses rather than booleans so that "not reported yet"
// (Unknown) is told apart from "failed" (False): a cluster is True when every manifest is, False when
// any manifest is, Unknown otherwise.
type ClusterStatus struct {
	// Name of the ManagedCluster.
	Name string `json:"name"`
	// ManifestWork is the name of the work in the cluster's namespace on the hub.
	// +optional
	ManifestWork string `json:"manifestWork,omitempty"`
	// Applied aggregates the manifests' Applied conditions.
	// +optional
	Applied metav1.ConditionStatus `json:"applied,omitempty"`
	// Available aggregates the manifests' Available conditions.
	// +optional
	Available metav1.ConditionStatus `json:"available,omitempty"`
	// Health aggregates the manifests' health: Degraded when any is, else Progressing when any is,
	// Healthy when all are, else Unknown.
	// +optional
	Health Health `json:"health,omitempty"`
	// Manifests are the work's manifests that are not fine, as the cluster's agent reports them, at
	// most MaxManifestsListed by ordinal.
	// +optional
	// +kubebuilder:validation:MaxItems=5
	Manifests []ManifestStatus `json:"manifests,omitempty"`
	// OmittedManifests counts the manifests that are not fine beyond those listed.
	// +optional
	OmittedManifests int32 `json:"omittedManifests,omitempty"`
}

// ManifestStatus is one manifest of a ManifestWork as its agent reports it.
type ManifestStatus struct {
	// Ordinal is the manifest's index in the ManifestWork's spec.workload.manifests.
	Ordinal int32 `json:"ordinal"`
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Applied is the status of the manifest's Applied condition.
	// +optional
	Applied metav1.ConditionStatus `json:"applied,omitempty"`
	// Available is the status of the manifest's Available condition.
	// +optional
	Available metav1.ConditionStatus `json:"available,omitempty"`
	// Health is the object's health from its Progressing and Degraded conditions.
	// +optional
	Health Health `json:"health,omitempty"`
	// Message explains a condition that is not True, e.g. the fields of an apply conflict, or why the
	// object is not healthy; at most MaxMessageLength bytes (the ManifestWork has all of it).
	// +optional
	Message string `json:"message,omitempty"`
	// Feedback are the status values the agent reported, e.g. ReadyReplicas.
	// +optional
	Feedback []FeedbackValue `json:"feedback,omitempty"`
}

// Health is what the agent's Progressing and Degraded conditions say of an object, or of a cluster's
// objects together.
// +kubebuilder:validation:Enum=Healthy;Progressing;Degraded;Unknown
type Health string

const (
	// Healthy: neither progressing nor degraded (kstatus Current, or a conditionRule says so).
	Healthy Health = "Healthy"
	// Progressing: on its way, e.g. a Deployment whose replicas are not all ready yet.
	Progressing Health = "Progressing"
	// Degraded: failed, e.g. a Deployment past its progress deadline or a failed Job.
	Degraded Health = "Degraded"
	// HealthUnknown: not reported (yet), e.g. by an agent that does not compute health.
	HealthUnknown Health = "Unknown"
)

// FeedbackValue is one reported status value, rendered as text.
type FeedbackValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Summary counts the target clusters. Applied and Available are "<ready>/<total>" strings, e.g. "1/2",
// because that is what a person wants to read in `kubectl get`.
type Summary struct {
	// Clusters is the number of target clusters.
	Clusters int32 `json:"clusters"`
	// Applied is "<clusters whose manifests are all applied>/<clusters>".
	Applied string `json:"applied"`
	// Available is "<clusters whose manifests are all available>/<clusters>".
	Available string `json:"available"`
	// Healthy is "<clusters whose manifests are all healthy>/<clusters>".
	// +optional
	Healthy string `json:"healthy,omitempty"`
}

// DriftStatus is what the agents report of the application's objects changed on their clusters — by a
// person's `kubectl edit`, a controller — in fields the ManifestWork sets, and put back: the condition
// Drifted of a work's manifests, for the generation of the work the hub delivered. Only the objects the
// AppConfig renders now count (an earlier revision's workload kept for a rollout does not). It is the
// same size for one drifted object or ten thousand; each work's manifests have all of it.
type DriftStatus struct {
	// Clusters counts the clusters where at least one object drifted.
	Clusters int32 `json:"clusters"`
	// Objects counts the drifted objects over all clusters.
	Objects int32 `json:"objects"`
	// Latest are the objects changed most recently, at most MaxDriftedObjectsListed, the most recent
	// first.
	// +optional
	// +kubebuilder:validation:MaxItems=5
	Latest []DriftedObject `json:"latest,omitempty"`
}

// DriftedObject is one object changed on its cluster and put back, as its agent reported it.
type DriftedObject struct {
	// Cluster is the ManagedCluster the object is on.
	Cluster string `json:"cluster"`
	// Kind is the object's kind, as its manifest names it.
	Kind string `json:"kind"`
	// Namespace is the object's namespace on the cluster; empty for a cluster-scoped object.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name is the object's name.
	Name string `json:"name"`
	// Managers are who changed it the last time: the field managers the cluster's API server recorded
	// ("kubectl-edit", "kubectl-client-side-apply", a controller's name), the most recent first, at
	// most MaxDriftManagersListed. Empty when the object did not say.
	// +optional
	// +kubebuilder:validation:MaxItems=3
	Managers []string `json:"managers,omitempty"`
	// Fields are paths the last change touched (".spec.replicas"), at most MaxDriftFieldsListed.
	// +optional
	// +kubebuilder:validation:MaxItems=5
	Fields []string `json:"fields,omitempty"`
	// MoreFields counts the paths the last change touched beyond Fields.
	// +optional
	MoreFields int32 `json:"moreFields,omitempty"`
	// Count is how many times the object was found changed and put back since its cluster was
	// delivered the current generation of the work.
	Count int32 `json:"count"`
	// Time is when it was last changed.
	Time metav1.Time `json:"time"`
}

const (
	// MaxDriftedObjectsListed is how many drifted objects an AppConfig's status names.
	MaxDriftedObjectsListed = 5
	// MaxDriftFieldsListed is how many changed fields a drifted object names, as many as its agent
	// reports.
	MaxDriftFieldsListed = 5
	// MaxDriftManagersListed is how many field managers a drifted object names.
	MaxDriftManagersListed = 3
)

// DiffStatus is what the agents report of the previews of a report-only AppConfig: for each cluster of
// its placement, what applying the spec would change against the live objects. It is the same size for
// one cluster or ten thousand; each preview ManifestWork has all of its cluster's report
// (`kubectl ferry diff appconfig` shows them).
type DiffStatus struct {
	// Generation is the AppConfig's metadata.generation the previews carry.
	Generation int64 `json:"generation"`
	// Clusters counts the clusters previewed: those of the placement.
	Clusters int32 `json:"clusters"`
	// Reported counts the clusters whose agent reported on the preview as it is now.
	Reported int32 `json:"reported"`
	// Pending are the clusters whose agent has not reported on their preview as it is now, the first
	// MaxClustersListed by name.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=20
	Pending []string `json:"pending,omitempty"`
	// Changing counts the reported clusters where applying the spec would change at least one object.
	Changing int32 `json:"changing"`
	// Objects counts the objects that would change, over the reported clusters.
	Objects int32 `json:"objects"`
	// Changes are objects that would change, the first MaxDiffObjectsListed by cluster name and then in
	// the order of the work's manifests.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	Changes []ObjectDiff `json:"changes,omitempty"`
}

// ObjectDiff is what applying the spec would change of one object on its cluster.
type ObjectDiff struct {
	// Cluster is the ManagedCluster the object is on.
	Cluster string `json:"cluster"`
	// Kind is the object's kind, as its manifest names it.
	Kind string `json:"kind"`
	// Namespace is the object's namespace on the cluster; empty for a cluster-scoped object.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name is the object's name.
	Name string `json:"name"`
	// Create: the object does not exist on the cluster, and would be created.
	// +optional
	Create bool `json:"create,omitempty"`
	// Fields are fields that would change, at most MaxDiffFieldsListed, by path.
	// +optional
	// +kubebuilder:validation:MaxItems=5
	Fields []FieldDiff `json:"fields,omitempty"`
	// MoreFields counts the fields that would change beyond Fields.
	// +optional
	MoreFields int32 `json:"moreFields,omitempty"`
}

// FieldDiff is one field that would change: its value on the cluster and in the spec, each as JSON
// ("null" for a field the object lacks), a long value cut and a Secret's data hidden.
type FieldDiff struct {
	// Path is the field (".spec.replicas", ".metadata.labels[app]").
	Path string `json:"path"`
	// Live is its value on the cluster.
	Live string `json:"live"`
	// Want is its value in the spec.
	Want string `json:"want"`
}

const (
	// MaxDiffObjectsListed is how many objects that would change an AppConfig's status names.
	MaxDiffObjectsListed = 10
	// MaxDiffFieldsListed is how many fields that would change an object names, as many as its agent
	// reports.
	MaxDiffFieldsListed = 5
)

// The condition of a report-only AppConfig's status, and its reasons.
const (
	// ConditionPreviewed is True once the agent of every cluster of the placement reported on the
	// cluster's preview as it is now; its message counts what would change where. Absent when the
	// AppConfig is delivered.
	ConditionPreviewed = "Previewed"
	// ReasonWouldChange: applying the spec would change objects on some clusters.
	ReasonWouldChange = "WouldChange"
	// ReasonNoChange: applying the spec would change nothing on any cluster.
	ReasonNoChange = "NoChange"
	// ReasonWaitingForReports: some clusters have not reported on their preview yet.
	ReasonWaitingForReports = "WaitingForReports"
	// ReasonReportOnly is the Ready condition's reason (False) while the AppConfig is report only:
	// nothing of its spec is delivered.
	ReasonReportOnly = "ReportOnly"
)

// ApplicationConfiguration is an OAM application: Component instances with parameter values and traits,
// delivered by the hub to the clusters its placement names.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=appconfig,categories=oam
// +kubebuilder:printcolumn:name="CLUSTERS",type=integer,JSONPath=".status.summary.clusters"
// +kubebuilder:printcolumn:name="APPLIED",type=string,JSONPath=".status.summary.applied"
// +kubebuilder:printcolumn:name="AVAILABLE",type=string,JSONPath=".status.summary.available"
// +kubebuilder:printcolumn:name="HEALTHY",type=string,JSONPath=".status.summary.healthy"
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="REFUSED",type=integer,priority=1,JSONPath=".status.placement.refusedClusters",description="Clusters the placement names that no ManagedClusterSet bound to the namespace holds"
// +kubebuilder:printcolumn:name="DRIFTED",type=integer,priority=1,JSONPath=".status.drift.clusters",description="Clusters where an object was changed on the cluster and put back"
type ApplicationConfiguration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ApplicationConfigurationSpec   `json:"spec"`
	Status ApplicationConfigurationStatus `json:"status,omitempty"`
}

// ApplicationConfigurationList is a list of ApplicationConfigurations.
//
// +kubebuilder:object:root=true
type ApplicationConfigurationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ApplicationConfiguration `json:"items"`
}
