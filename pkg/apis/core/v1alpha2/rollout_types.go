package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The progressive rollout of an application: how a new revision of what the hub renders for an
// ApplicationConfiguration reaches its clusters, in stages gated on the health the agents report.
// The words are OCM's where OCM has one (open-cluster-management.io/api cluster/v1alpha1
// RolloutStrategy: maxConcurrency, maxFailures, minSuccessTime, progressDeadline); package
// github.com/ferry-mc/ferry/pkg/rollout decides, from these and the clusters' reports, which revision
// each cluster's work carries.
//
// A revision of the application is what the hub renders for it (every ManifestWork's spec: component
// revisions, parameter values, traits, strategies, executor), recorded as a ControllerRevision of the
// AppConfig named <appconfig>-<hash>, so that the stable revision can be delivered again exactly.

// Rollout says how a new revision reaches the application's clusters.
type Rollout struct {
	// Stages in order. Each takes clusters no earlier stage took; the clusters no stage takes form a
	// last stage of their own. No stages: one stage of every cluster.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Stages []RolloutStage `json:"stages,omitempty"`

	// RolloutConfig holds the defaults of every stage.
	RolloutConfig `json:",inline"`

	// MaxFailures is how many clusters of the whole rollout may fail (be Degraded, or not Healthy by
	// their progressDeadline) before it halts: a count, or a whole percentage of the clusters such as "10%" (rounded up).
	// Default 0: the first failure halts it.
	// +optional
	MaxFailures *intstr.IntOrString `json:"maxFailures,omitempty"`

	// Paused holds the rollout where it is: no further cluster receives the new revision; those that
	// have it keep it.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// OnFailure is what a halted rollout does: Pause (the default) keeps every cluster as it is;
	// Rollback returns every cluster to the stable revision.
	// +optional
	// +kubebuilder:validation:Enum=Pause;Rollback
	OnFailure RolloutFailurePolicy `json:"onFailure,omitempty"`

	// UnreachableClusters says what a cluster whose ManagedCluster is not Available does to its stage:
	// Wait (the default) waits for it, within its progressDeadline; Skip lets the stage go on without
	// it; Fail counts it as failed.
	// +optional
	// +kubebuilder:validation:Enum=Wait;Skip;Fail
	UnreachableClusters UnreachablePolicy `json:"unreachableClusters,omitempty"`
}

// RolloutConfig is what gates a stage.
type RolloutConfig struct {
	// MaxConcurrency is how many clusters of the stage may be changing at once (updated and not yet
	// succeeded, failed ones included): a count, or a whole percentage of the stage's clusters (rounded up).
	// Default: the whole stage at once.
	// +optional
	MaxConcurrency *intstr.IntOrString `json:"maxConcurrency,omitempty"`

	// MinSuccessTime is how long a cluster must have been Healthy at the new revision before it counts
	// as succeeded (a soak). Default 0.
	// +optional
	MinSuccessTime *metav1.Duration `json:"minSuccessTime,omitempty"`

	// ProgressDeadline is how long a cluster may take, from the moment its work got the new revision,
	// to succeed; past it, it has failed. Default: no deadline.
	// +optional
	ProgressDeadline *metav1.Duration `json:"progressDeadline,omitempty"`
}

// RolloutStage is one step of a rollout.
type RolloutStage struct {
	// Name of the stage, unique in the rollout; approvals name it.
	Name string `json:"name"`

	// Clusters by name.
	// +optional
	Clusters []string `json:"clusters,omitempty"`

	// ClusterSelector takes the clusters whose labels match, besides those named.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`

	// DecisionGroups takes, when the application is placed by an OCM Placement (placement.placementRef),
	// the clusters of these decision groups of it, each named by its name or its index (the labels
	// cluster.open-cluster-management.io/decision-group-name and -index of its PlacementDecisions).
	// +optional
	DecisionGroups []string `json:"decisionGroups,omitempty"`

	// Size takes, of the clusters named, selected or in the groups (or, with none of them, of the clusters no earlier
	// stage took), the first ones by name: a count, or a whole percentage of all the rollout's clusters
	// (rounded up). Default: all of them.
	// +optional
	Size *intstr.IntOrString `json:"size,omitempty"`

	// RequireApproval holds the stage until it is approved (kubectl ferry rollout approve).
	// +optional
	RequireApproval bool `json:"requireApproval,omitempty"`

	// RolloutConfig overrides the rollout's defaults for this stage.
	RolloutConfig `json:",inline"`
}

// RolloutFailurePolicy is what a halted rollout does.
type RolloutFailurePolicy string

const (
	RolloutFailurePause    RolloutFailurePolicy = "Pause"
	RolloutFailureRollback RolloutFailurePolicy = "Rollback"
)

// UnreachablePolicy is what an unreachable cluster does to its stage.
type UnreachablePolicy string

const (
	UnreachableWait UnreachablePolicy = "Wait"
	UnreachableSkip UnreachablePolicy = "Skip"
	UnreachableFail UnreachablePolicy = "Fail"
)

// RolloutPhase is where a rollout stands.
type RolloutPhase string

const (
	// RolloutProgressing: clusters are receiving the new revision stage by stage.
	RolloutProgressing RolloutPhase = "Progressing"
	// RolloutPaused: spec.paused holds it.
	RolloutPaused RolloutPhase = "Paused"
	// RolloutWaitingForApproval: the next stage requires an approval it does not have.
	RolloutWaitingForApproval RolloutPhase = "WaitingForApproval"
	// RolloutHalted: more clusters failed than maxFailures allows; with onFailure Pause it stays so.
	RolloutHalted RolloutPhase = "Halted"
	// RolloutRollingBack: halted with onFailure Rollback; clusters are returning to the stable revision.
	RolloutRollingBack RolloutPhase = "RollingBack"
	// RolloutRolledBack: every cluster is back on the stable revision and healthy.
	RolloutRolledBack RolloutPhase = "RolledBack"
	// RolloutComplete: every cluster succeeded at the revision, which is now the stable one.
	RolloutComplete RolloutPhase = "Complete"
)

// Annotations on an ApplicationConfiguration that `kubectl ferry rollout` writes and the hub reads.
const (
	// AnnotationRolloutApprovals approves stages of one revision: "<revision>=<stage>[,<stage>...]".
	// An approval of another revision than the one rolling out approves nothing.
	AnnotationRolloutApprovals = "ferry.io/rollout-approvals"
	// AnnotationRolloutResume, set to the revision rolling out, lifts a halt of that revision once:
	// the hub takes it away when it has.
	AnnotationRolloutResume = "ferry.io/rollout-resume"
	// AnnotationRolloutUndo, "<revision>@<generation>", rolls out one of the application's recorded
	// revisions instead of what its spec renders, as long as metadata.generation is that generation:
	// the next edit of the spec rolls out what the spec renders again.
	AnnotationRolloutUndo = "ferry.io/rollout-undo"
)

// Conditions of an ApplicationConfiguration with spec.rollout.
const (
	// ConditionRolloutComplete is True once every cluster succeeded at the revision.
	ConditionRolloutComplete = "RolloutComplete"
	// ConditionRolloutHalted is True while a rollout is halted (more failures than maxFailures).
	ConditionRolloutHalted = "RolloutHalted"
)

// RolloutStatus is where a rollout stands. It stays small at any fleet size: counts per stage and the
// first failures.
type RolloutStatus struct {
	// Revision is the revision the application wants (the ControllerRevision holding it).
	Revision string `json:"revision"`
	// StableRevision is the last revision every cluster succeeded at; rollback returns to it. Empty
	// before the first rollout completed.
	// +optional
	StableRevision string `json:"stableRevision,omitempty"`
	// Phase of the rollout of Revision.
	Phase RolloutPhase `json:"phase"`
	// Stage is the stage in progress, when one is.
	// +optional
	Stage string `json:"stage,omitempty"`
	// Stages in order, with their counts.
	// +optional
	// +kubebuilder:validation:MaxItems=33
	Stages []RolloutStageStatus `json:"stages,omitempty"`
	// Failures are the first failed clusters, in stage order then by name, each with why.
	// +optional
	// +kubebuilder:validation:MaxItems=20
	Failures []RolloutFailure `json:"failures,omitempty"`
	// OmittedFailures counts the failed clusters beyond those listed.
	// +optional
	OmittedFailures int32 `json:"omittedFailures,omitempty"`
	// Message says what the rollout waits for, or why it cannot go on.
	// +optional
	Message string `json:"message,omitempty"`
}

// RolloutStageStatus counts one stage's clusters.
type RolloutStageStatus struct {
	Name string `json:"name"`
	// Clusters in the stage; Updated of them carry the revision, Succeeded and Failed of those.
	Clusters  int32 `json:"clusters"`
	Updated   int32 `json:"updated"`
	Succeeded int32 `json:"succeeded"`
	Failed    int32 `json:"failed"`
	// StartedAt is when its first cluster received the revision; CompletedAt when its last one
	// succeeded or failed.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
}

// RolloutFailure is a failed cluster.
type RolloutFailure struct {
	Cluster string `json:"cluster"`
	Stage   string `json:"stage"`
	// Reason is Degraded, ProgressDeadlineExceeded or ClusterUnreachable.
	Reason string `json:"reason"`
	// Message says which manifest and why, as the agent reported it.
	// +optional
	Message string `json:"message,omitempty"`
}
