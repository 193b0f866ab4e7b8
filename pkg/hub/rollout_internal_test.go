package hub

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// What a rollout reads of a work: only a report on the work's current generation counts; a manifest the
// agent could not apply is Degraded; the reason names the Degraded manifest before a Progressing one;
// Healthy counts from the last transition of any condition that makes the verdict, never earlier.
func TestRolloutFactsOf(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
	cond := func(typ string, status metav1.ConditionStatus, gen int64, when time.Duration, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, ObservedGeneration: gen, LastTransitionTime: at(when), Message: msg}
	}
	healthy := func(gen int64, when time.Duration) []metav1.Condition {
		return []metav1.Condition{cond("Degraded", metav1.ConditionFalse, gen, when, ""), cond("Progressing", metav1.ConditionFalse, gen, when, "")}
	}
	manifest := func(kind, name string, conds ...metav1.Condition) workv1.ManifestCondition {
		return workv1.ManifestCondition{ResourceMeta: workv1.ManifestResourceMeta{Kind: kind, Name: name, Namespace: "prod"}, Conditions: conds}
	}
	work := func(gen, appliedGen int64, manifests ...workv1.ManifestCondition) *workv1.ManifestWork {
		mw := &workv1.ManifestWork{}
		mw.Generation = gen
		mw.CreationTimestamp = at(-time.Hour)
		mw.Annotations = map[string]string{AnnotationSpecHash: "abc", AnnotationRevisionSince: t0.Format(time.RFC3339)}
		mw.Status.Conditions = []metav1.Condition{cond(workv1.WorkApplied, metav1.ConditionTrue, appliedGen, time.Second, "")}
		mw.Status.ResourceStatus.Manifests = manifests
		return mw
	}

	stale := rolloutFactsOf(work(2, 1, manifest("ConfigMap", "a", healthy(1, time.Second)...)))
	if stale.reported || stale.health == v1alpha2.Healthy {
		t.Errorf("a report on generation 1 of a work at generation 2: %+v, want not reported", stale)
	}
	if stale.revision != "abc" || !stale.updatedAt.Equal(t0) {
		t.Errorf("revision %q updated at %v, want abc at %v", stale.revision, stale.updatedAt, t0)
	}

	fine := rolloutFactsOf(work(2, 2, manifest("ConfigMap", "a", healthy(2, 5*time.Second)...), manifest("Deployment", "web", healthy(2, 9*time.Second)...)))
	if !fine.reported || fine.health != v1alpha2.Healthy || !fine.healthySince.Equal(t0.Add(9*time.Second)) || fine.why != "" {
		t.Errorf("healthy work: %+v, want Healthy since the last transition, %v", fine, t0.Add(9*time.Second))
	}

	// An object changed on the cluster and put back since makes no verdict: Healthy since the same time.
	drifted := work(2, 2, manifest("ConfigMap", "a", healthy(2, 5*time.Second)...), manifest("Deployment", "web", healthy(2, 9*time.Second)...))
	web := &drifted.Status.ResourceStatus.Manifests[1]
	web.Conditions = append(web.Conditions, cond(workreport.ConditionDrifted, metav1.ConditionTrue, 2, 20*time.Second, "Changed on the cluster"))
	if f := rolloutFactsOf(drifted); f.health != v1alpha2.Healthy || !f.healthySince.Equal(t0.Add(9*time.Second)) {
		t.Errorf("healthy work with a drifted object: %+v, want Healthy since %v, before the drift", f, t0.Add(9*time.Second))
	}

	notApplied := rolloutFactsOf(work(2, 2, manifest("ConfigMap", "a", healthy(2, 0)...),
		manifest("Role", "admin", cond(workv1.ManifestApplied, metav1.ConditionFalse, 2, 0, "forbidden: the executor may not create roles"))))
	if notApplied.health != v1alpha2.Degraded || !strings.Contains(notApplied.why, "Role prod/admin") || !strings.Contains(notApplied.why, "forbidden") {
		t.Errorf("a manifest not applied: %+v, want Degraded naming it and why", notApplied)
	}

	mixed := rolloutFactsOf(work(3, 3,
		manifest("Deployment", "slow", cond("Progressing", metav1.ConditionTrue, 3, 0, "waiting for rollout")),
		manifest("Deployment", "broken", cond("Degraded", metav1.ConditionTrue, 3, 0, "Progress deadline exceeded"))))
	if mixed.health != v1alpha2.Degraded || !strings.Contains(mixed.why, "broken") || !strings.Contains(mixed.why, "Progress deadline exceeded") {
		t.Errorf("Progressing and Degraded manifests: %+v, want Degraded naming the Degraded one", mixed)
	}

	old := work(1, 1, manifest("ConfigMap", "a", healthy(1, 0)...))
	delete(old.Annotations, AnnotationRevisionSince) // written by a hub before rollouts
	if f := rolloutFactsOf(old); !f.updatedAt.Equal(t0.Add(-time.Hour)) {
		t.Errorf("a work without %s: updated at %v, want its creation %v", AnnotationRevisionSince, f.updatedAt, t0.Add(-time.Hour))
	}
}

func TestMostCarried(t *testing.T) {
	facts := map[string]rolloutFacts{"a": {revision: "r2"}, "b": {revision: "r1"}, "c": {revision: "r2"}, "d": {revision: "r1"}, "e": {revision: "r3"}}
	if got := mostCarried(facts); got != "r1" {
		t.Errorf("mostCarried = %q, want r1 (a tie between r1 and r2 goes to the smaller, so that it is the same every time)", got)
	}
	facts["f"] = rolloutFacts{revision: "r2"}
	if got := mostCarried(facts); got != "r2" {
		t.Errorf("mostCarried = %q, want r2", got)
	}
	if got := mostCarried(nil); got != "" {
		t.Errorf("mostCarried(nil) = %q", got)
	}
}
