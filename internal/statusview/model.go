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
	// Manifests are the work's manifests in the order of spec.workload.manifests.
	Manifests []Manifest `json:"manifests"`
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
	// Strategy is the update strategy the work's manifestConfigs give the manifest (default Update).
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
