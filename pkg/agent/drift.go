package agent

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apply"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// setManifestDrift records on a manifest's conditions that its object was found changed on the cluster
// and put back in this round (drift not nil): Drifted True, its count carried on from what the condition
// said about the same generation. A Drifted condition about an earlier generation is dropped: drift is
// reported per delivered generation.
func setManifestDrift(conds *[]metav1.Condition, drift *apply.Drift, gen int64, now time.Time) {
	prev := meta.FindStatusCondition(*conds, workreport.ConditionDrifted)
	if prev != nil && prev.ObservedGeneration != gen {
		meta.RemoveStatusCondition(conds, workreport.ConditionDrifted)
		prev = nil
	}
	if drift == nil {
		return
	}
	d := workreport.Drift{Count: 1, Managers: drift.Managers, Fields: drift.Fields, MoreFields: drift.MoreFields, Time: now}
	if drift.Time != nil {
		d.Time = drift.Time.Time
	}
	if old, ok := workreport.ReadDrift(prev); ok {
		d.Count = old.Count + 1
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: workreport.ConditionDrifted, Status: metav1.ConditionTrue,
		Reason: workreport.ReasonDriftReverted, Message: workreport.DriftMessage(d), ObservedGeneration: gen})
}

// maxDriftedNamed bounds the objects a work's Drifted condition names.
const maxDriftedNamed = 3

// setWorkDrift sets the work's own Drifted condition from its manifests': True naming the first few
// objects that drifted for generation gen, and none at all when no object did.
func setWorkDrift(conds *[]metav1.Condition, manifests []workv1.ManifestCondition, gen int64) {
	var named []string
	drifted := 0
	for i := range manifests {
		m := &manifests[i]
		c := meta.FindStatusCondition(m.Conditions, workreport.ConditionDrifted)
		d, ok := workreport.ReadDrift(c)
		if !ok || c.ObservedGeneration != gen {
			continue
		}
		drifted++
		if len(named) < maxDriftedNamed {
			by := workreport.UnknownManager
			if len(d.Managers) > 0 {
				by = d.Managers[0]
			}
			named = append(named, fmt.Sprintf("%s by %s (%d)", describeMeta(m.ResourceMeta), by, d.Count))
		}
	}
	if drifted == 0 {
		meta.RemoveStatusCondition(conds, workreport.ConditionDrifted)
		return
	}
	msg := fmt.Sprintf("%d of %d objects were changed on the cluster and put back: %s", drifted, len(manifests), strings.Join(named, ", "))
	if drifted > len(named) {
		msg += fmt.Sprintf(" and %d more", drifted-len(named))
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: workreport.ConditionDrifted, Status: metav1.ConditionTrue,
		Reason: workreport.ReasonDriftReverted, Message: msg, ObservedGeneration: gen})
}
