package statusview

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// The data model below is what `kubectl ferry ... -o json|yaml` writes, field for field: scripts read
// it, so a field is renamed or removed only with a note in the README.

// AppConfig is one ApplicationConfiguration across the clusters it is delivered to.
type AppConfig struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Ready is the status of the AppConfig's Ready condition (rendered and delivered to every target
	// cluster); Unknown while the hub has not looked at the AppConfig's current generation.
	Ready metav1.ConditionStatus `json:"ready"`
	// ReadyMessage explains Ready when it is not True.
	ReadyMessage string `json:"readyMessage,omitempty"`
	// Healthy: Ready, delivered to at least one cluster, and every counted manifest on every cluster
	// applied, available and Healthy. `--until-healthy` waits for it.
	Healthy bool `json:"healthy"`
	// Clusters are the works delivering the AppConfig, one per cluster, by cluster name.
	Clusters []Work `json:"clusters"`
	// NotBound is the AppConfig's ClustersBound condition when it is False: clusters its placement
	// names that no ManagedClusterSet bound to its namespace holds. Absent when every one is bound.
	NotBound *NotBound `json:"notBound,omitempty"`
	// Drift is the AppConfig's status.drift: how many clusters and objects its agents found changed on
	// the cluster and put back, and the latest few. Absent when nothing drifted.
	Drift *v1alpha2.DriftStatus `json:"drift,omitempty"`

	// StatusOnly marks a view read from the AppConfig's status alone, for a user who may not read
	// ManifestWorks (a tenant, who may read only her own namespace): Summary holds the hub's counts,
	// Clusters the clusters of status.placement and, with their manifests that are not fine, those
	// of status.clusters; a cluster the status tells nothing more of has no manifests listed.
	StatusOnly bool `json:"statusOnly,omitempty"`
	// Summary is the AppConfig's status.summary, in a StatusOnly view.
	Summary *v1alpha2.Summary `json:"summary,omitempty"`
	// MoreClusters counts, in a StatusOnly view, the clusters delivered to that the status does not
	// name: it names the first MaxClustersListed by name.
	MoreClusters int32 `json:"moreClusters,omitempty"`
	// OmittedClusters is, in a StatusOnly view, the status's own: how many clusters that are not fine
	// it does not list. Any cluster it does not list may then be one of them (its health Unknown here).
	OmittedClusters int32 `json:"omittedClusters,omitempty"`
}

// NotBound is an AppConfig's ClustersBound condition when it is False, with the clusters its status
// names as refused.
type NotBound struct {
	// Reason is ClustersNotBound (the refused clusters get no ManifestWork) or ClustersNotBoundAudit
	// (ferry-hub only audits its bindings and delivers to them all the same).
	Reason string `json:"reason"`
	// Message is the hub's, which also says how to allow the clusters.
	Message string `json:"message,omitempty"`
	// Refused are the first MaxClustersListed refused clusters by name; RefusedClusters counts them all.
	Refused         []string `json:"refused"`
	RefusedClusters int32    `json:"refusedClusters"`
}

// Work is one ManifestWork as its cluster's agent reports it.
type Work struct {
	// Cluster is the managed cluster: the hub namespace of the work.
	Cluster string `json:"cluster"`
	// Name is the ManifestWork's name.
	Name string `json:"name"`
	// Applied and Available are the work's own conditions (every manifest applied, every object
	// present); Unknown while the agent has not reported on the work's current generation.
	Applied   metav1.ConditionStatus `json:"applied"`
	Available metav1.ConditionStatus `json:"available"`
	// Health aggregates the counted manifests' health: Degraded when any is, else Progressing when any
	// is, else Unknown when any is, else Healthy.
	Health v1alpha2.Health `json:"health"`
	// Healthy: every counted manifest is applied, available and Healthy.
	Healthy bool `json:"healthy"`
	// Manifests are the work's manifests in the order of spec.workload.manifests. In a StatusOnly
	// view of an AppConfig: only those the AppConfig's status lists as not fine.
	Manifests []Manifest `json:"manifests"`
	// OmittedManifests counts, in a StatusOnly view, the manifests that are not fine beyond those
	// listed.
	OmittedManifests int32 `json:"omittedManifests,omitempty"`

	// unlisted marks, in a StatusOnly view, a cluster the status may have left out of its clusters
	// that are not fine (see AppConfig.OmittedClusters): nothing is known of it.
	unlisted bool
}

// Manifest is one manifest of a work: what it is, how it is applied, and what the agent reports.
type Manifest struct {
	// Ordinal is the manifest's index in the work's spec.workload.manifests.
	Ordinal   int32  `json:"ordinal"`
	Group     string `json:"group,omitempty"`
	Version   string `json:"version,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Strategy is the update strategy the work's manifestConfigs give the manifest (default Update);
	// empty in a StatusOnly view, whose status does not say.
	Strategy string `json:"strategy"`
	// Applied and Available are the statuses of the manifest's conditions of those types; Unknown when
	// not reported for the work's current generation.
	Applied   metav1.ConditionStatus `json:"applied"`
	Available metav1.ConditionStatus `json:"available"`
	// Health is what the manifest's Progressing and Degraded conditions say, as the hub reads them for
	// the AppConfig's status.
	Health v1alpha2.Health `json:"health"`
	// Reason and Message are those of the condition that keeps the manifest from being fine (Applied,
	// then Degraded or Progressing, then Available); empty when it is fine.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Feedback are the status values the agent reported (the work's feedbackRules), as text.
	Feedback []v1alpha2.FeedbackValue `json:"feedback,omitempty"`
	// EarlierRevision marks, in an AppConfig, a workload of an earlier component revision kept beside
	// the current one for a rollout: listed, but not counted in its cluster's health, because a
	// rollout scales it away.
	EarlierRevision bool `json:"earlierRevision,omitempty"`
}

// Clusters are the hub's ManagedClusters.
type Clusters struct {
	Clusters []Cluster `json:"clusters"`
}

// Cluster is one ManagedCluster: whether its agent joined and is available, who registered it, and how
// many ManifestWorks its namespace holds.
type Cluster struct {
	Name string `json:"name"`
	// Joined and Available are the statuses of its ManagedClusterJoined and
	// ManagedClusterConditionAvailable conditions; Unknown when missing.
	Joined    metav1.ConditionStatus `json:"joined"`
	Available metav1.ConditionStatus `json:"available"`
	// RegisteredBy is "ferry-hub" for a cluster `ferry-hub clusters add` registered (ferry-hub keeps
	// its conditions), "other" for the rest (OCM's registration, or a person).
	RegisteredBy string `json:"registeredBy"`
	// Works is the number of ManifestWorks in the cluster's namespace.
	Works int `json:"works"`
	// Message is the Available condition's message when Available is not True.
	Message string `json:"message,omitempty"`
}

// Rollout is the progressive rollout of an ApplicationConfiguration (its spec.rollout) as the hub
// reports it in status.rollout, with what `kubectl ferry rollout` asked of the hub that the hub has not
// acted on yet.
type Rollout struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Enabled: the AppConfig has a spec.rollout. Without one a new revision reaches every cluster at
	// once, and the fields below are empty.
	Enabled bool `json:"enabled"`
	// Paused is spec.rollout.paused.
	Paused bool `json:"paused,omitempty"`
	// Generation is the AppConfig's metadata.generation; Observed says whether the hub's status is about
	// it (status.observedGeneration). Until it is, the fields below may describe an earlier spec.
	Generation int64 `json:"generation"`
	Observed   bool  `json:"observed"`
	// Revision is the revision the application wants (a ControllerRevision's name), StableRevision the
	// last one every cluster succeeded at; both empty before the hub reported on the rollout.
	Revision       string                `json:"revision,omitempty"`
	StableRevision string                `json:"stableRevision,omitempty"`
	Phase          v1alpha2.RolloutPhase `json:"phase,omitempty"`
	// Stage is the stage in progress, when one is.
	Stage string `json:"stage,omitempty"`
	// Message is the hub's: what the rollout waits for, or why it cannot go on.
	Message string `json:"message,omitempty"`
	// Stages in order, with their counts of clusters.
	Stages []v1alpha2.RolloutStageStatus `json:"stages"`
	// Failures are the first failed clusters; OmittedFailures counts the others.
	Failures        []v1alpha2.RolloutFailure `json:"failures"`
	OmittedFailures int32                     `json:"omittedFailures,omitempty"`
	// Requests are what `kubectl ferry rollout resume` or `undo` asked of the hub (its annotations) that
	// status.rollout does not show taken yet, one line each.
	Requests []string `json:"requests,omitempty"`
}

// RolloutHistory is the revisions of an ApplicationConfiguration the hub recorded (ControllerRevisions),
// oldest first.
type RolloutHistory struct {
	Namespace string        `json:"namespace"`
	Name      string        `json:"name"`
	Revisions []AppRevision `json:"revisions"`
}

// AppRevision is one recorded revision of an application.
type AppRevision struct {
	// Revision is the ControllerRevision's number: `kubectl ferry rollout undo --to-revision` takes it.
	Revision int64       `json:"revision"`
	Name     string      `json:"name"`
	Created  metav1.Time `json:"created"`
	// RollingOut marks the revision the application wants (status.rollout.revision) while it is not
	// the stable one; Stable the one every cluster last succeeded at (status.rollout.stableRevision).
	RollingOut bool `json:"rollingOut,omitempty"`
	Stable     bool `json:"stable,omitempty"`
}
