package hub

import (
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// listedCluster is a cluster as the AppConfig's status lists it: its current manifests that are not
// fine, the first v1alpha2.MaxManifestsListed by ordinal, messages cut to v1alpha2.MaxMessageLength.
func listedCluster(cs v1alpha2.ClusterStatus, current map[string]bool) v1alpha2.ClusterStatus {
	all := cs.Manifests
	cs.Manifests = nil
	for _, m := range all {
		if m.Fine() || (len(current) > 0 && !current[m.Kind+"/"+m.Name]) {
			continue
		}
		if len(cs.Manifests) == v1alpha2.MaxManifestsListed {
			cs.OmittedManifests++
			continue
		}
		m.Message = cutMessage(m.Message, v1alpha2.MaxMessageLength, "… (cut; the ManifestWork has all of it)")
		cs.Manifests = append(cs.Manifests, m)
	}
	return cs
}

// maxConditionMessage is the longest message a metav1.Condition takes (its schema's maxLength): a
// Ready message naming thousands of clusters would have the whole status write rejected.
const maxConditionMessage = 32768

// capConditionMessage fits msg into a condition's message.
func capConditionMessage(msg string) string {
	return cutMessage(msg, maxConditionMessage/4, "… (cut; the AppConfig's events and its ManifestWorks say more)")
}

// cutMessage cuts msg to at most limit bytes at a character boundary, ending it with mark.
func cutMessage(msg string, limit int, mark string) string {
	if len(msg) <= limit {
		return msg
	}
	end := limit - len(mark)
	for end > 0 && !utf8.RuneStart(msg[end]) {
		end--
	}
	return msg[:end] + mark
}

// clusterStatus folds a ManifestWork's status into the AppConfig's view of one cluster. The cluster's
// Applied and Available aggregate the manifests of the objects rendered now (current): an earlier
// revision's workload kept for a rollout may be scaled away and deleted without the application
// being any less available. Without detail it gives the cluster's verdicts alone, no manifests (and
// allocates nothing for a cluster of a few objects: workSummaries judges every work of a fleet by it);
// with detail, the manifests, each with what only a listed cluster shows: its apiVersion, message and
// feedback.
func clusterStatus(mw *workv1.ManifestWork, current map[string]bool, detail bool) v1alpha2.ClusterStatus {
	cs := v1alpha2.ClusterStatus{Name: mw.Namespace, ManifestWork: mw.Name,
		Applied:   workreport.WorkStatus(mw.Status.Conditions, workv1.WorkApplied, mw.Generation),
		Available: workreport.WorkStatus(mw.Status.Conditions, workv1.WorkAvailable, mw.Generation)}
	var appliedBuf, availableBuf [8]metav1.ConditionStatus
	var healthsBuf [8]v1alpha2.Health
	applied, available, healths := appliedBuf[:0], availableBuf[:0], healthsBuf[:0]
	for _, m := range mw.Status.ResourceStatus.Manifests {
		r := workreport.ReadManifest(m.Conditions, mw.Generation)
		ms := v1alpha2.ManifestStatus{
			Ordinal: m.ResourceMeta.Ordinal, Kind: m.ResourceMeta.Kind, Name: m.ResourceMeta.Name, Namespace: m.ResourceMeta.Namespace,
			Applied: r.Applied, Available: r.Available, Health: r.Health,
		}
		if detail {
			ms.APIVersion = m.ResourceMeta.Version
			if m.ResourceMeta.Group != "" {
				ms.APIVersion = m.ResourceMeta.Group + "/" + m.ResourceMeta.Version
			}
			if c := r.AppliedCondition; c != nil && c.Status != metav1.ConditionTrue {
				ms.Message = c.Message
			} else if r.Unhealthy != nil {
				ms.Message = r.Unhealthy.Message
			}
			for _, v := range m.StatusFeedbacks.Values {
				ms.Feedback = append(ms.Feedback, workreport.FeedbackValue(v))
			}
			cs.Manifests = append(cs.Manifests, ms)
		}
		isCurrent := current[ms.Kind+"/"+ms.Name]
		if len(current) == 0 || isCurrent {
			healths = append(healths, ms.Health)
		}
		if isCurrent {
			applied, available = append(applied, ms.Applied), append(available, ms.Available)
		}
	}
	cs.Health = workreport.AggregateHealth(healths)
	if len(current) > 0 && cs.Applied != metav1.ConditionUnknown {
		// The work reports on this generation: summarizeWork by the current objects alone.
		cs.Applied, cs.Available = aggregate(applied, len(current)), aggregate(available, len(current))
	}
	return cs
}

// aggregate is True when all want statuses are reported True, False when any is False, else Unknown.
func aggregate(statuses []metav1.ConditionStatus, want int) metav1.ConditionStatus {
	trues := 0
	for _, s := range statuses {
		switch s {
		case metav1.ConditionFalse:
			return metav1.ConditionFalse
		case metav1.ConditionTrue:
			trues++
		}
	}
	if trues >= want {
		return metav1.ConditionTrue
	}
	return metav1.ConditionUnknown
}
