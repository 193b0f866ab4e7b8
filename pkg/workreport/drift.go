package workreport

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionDrifted is Ferry's condition, on a manifest and on its work, saying that the manifest's
// object was changed on the cluster in fields the work sets — by a person's `kubectl edit`, a
// controller — and that the agent put them back, since the work's current generation was delivered
// (its observedGeneration). It is a plain condition, so that every client of OCM's ManifestWork API
// shows it (`kubectl get manifestwork -o yaml`, clusteradm, OCM's console) without types of Ferry's;
// it lives in the work's status, so an agent's restart keeps it. A work that never drifted has none: the
// steady state writes nothing more than before. A new generation of the work starts afresh.
const ConditionDrifted = "Drifted"

// ReasonDriftReverted is the reason of a True Drifted condition.
const ReasonDriftReverted = "ChangedOnClusterAndPutBack"

// UnknownManager is how a drift report names who changed an object when its managedFields do not say.
const UnknownManager = "an unknown manager"

// Drift is what a Drifted condition of a manifest says.
type Drift struct {
	// Count is how many times the object was found changed and put back for the generation.
	Count int
	// Managers are who changed it the last time (field managers, as the API server recorded them:
	// "kubectl-edit", "hpa-controller"), most recent first; empty when the object does not say.
	Managers []string
	// Fields are some of the paths changed the last time; MoreFields counts the others.
	Fields     []string
	MoreFields int
	// Time is when it was last changed.
	Time time.Time
}

// ChangedBy says who changed an object, and which fields, as every report of drift says it: by
// "kubectl-edit, hpa-controller" ("an unknown manager" when managers is empty), fields ".spec.replicas,
// .data.k and 2 more".
func ChangedBy(managers, fields []string, moreFields int) (by, changed string) {
	by = UnknownManager
	if len(managers) > 0 {
		by = strings.Join(managers, ", ")
	}
	changed = strings.Join(fields, ", ")
	if moreFields > 0 {
		changed += fmt.Sprintf(" and %d more", moreFields)
	}
	return by, changed
}

// DriftMessage is the message of a manifest's Drifted condition for d: one line a person reads, which
// ReadDrift reads back.
func DriftMessage(d Drift) string {
	by, fields := ChangedBy(d.Managers, d.Fields, d.MoreFields)
	times := "time"
	if d.Count != 1 {
		times = "times"
	}
	return fmt.Sprintf("Changed on the cluster by %s at %s (%s), and put back; %d %s so far",
		by, d.Time.UTC().Format(time.RFC3339), fields, d.Count, times)
}

var driftMessage = regexp.MustCompile(`^Changed on the cluster by (.*) at (\S+) \((.*)\), and put back; (\d+) times? so far$`)

// DriftOf is what a manifest's Drifted condition among conds says about the work's generation gen;
// false when there is none, or one about an earlier generation (a delivery since starts afresh).
func DriftOf(conds []metav1.Condition, gen int64) (Drift, bool) {
	return ReadDrift(aboutGeneration(conds, ConditionDrifted, gen))
}

// ReadDrift reads a manifest's Drifted condition back; false when c is not a True one of Ferry's format.
func ReadDrift(c *metav1.Condition) (Drift, bool) {
	if c == nil || c.Type != ConditionDrifted || c.Status != metav1.ConditionTrue {
		return Drift{}, false
	}
	m := driftMessage.FindStringSubmatch(c.Message)
	if m == nil {
		return Drift{}, false
	}
	at, err := time.Parse(time.RFC3339, m[2])
	if err != nil {
		// Not Ferry's: what reads it back (an AppConfig's status) must say when.
		return Drift{}, false
	}
	d := Drift{Time: at}
	if m[1] != UnknownManager {
		d.Managers = strings.Split(m[1], ", ")
	}
	fields := m[3]
	if i := strings.LastIndex(fields, " and "); i >= 0 && strings.HasSuffix(fields, " more") {
		d.MoreFields, _ = strconv.Atoi(strings.TrimSuffix(fields[i+len(" and "):], " more"))
		fields = fields[:i]
	}
	if fields != "" {
		d.Fields = strings.Split(fields, ", ")
	}
	d.Count, _ = strconv.Atoi(m[4])
	return d, true
}
