package hub

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// webApp is the AppConfig of the works reportedWork makes.
var webApp = types.NamespacedName{Namespace: "default", Name: "web"}

// reportedWork is a ManifestWork of AppConfig default/web with one Deployment "web" on cluster as an
// agent reports it: applied and available, with health h and, when not healthy, a message of msgLen
// bytes.
func reportedWork(cluster string, h v1alpha2.Health, msgLen int) *workv1.ManifestWork {
	const gen = 3
	cond := func(typ string, s metav1.ConditionStatus, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, ObservedGeneration: gen, Reason: "Reported", Message: msg}
	}
	progressing, degraded := metav1.ConditionFalse, metav1.ConditionFalse
	msg := ""
	switch h {
	case v1alpha2.Progressing:
		progressing, msg = metav1.ConditionTrue, strings.Repeat("p", msgLen)
	case v1alpha2.Degraded:
		degraded, msg = metav1.ConditionTrue, strings.Repeat("d", msgLen)
	}
	mw := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "default.web", Generation: gen,
		Labels: map[string]string{LabelAppConfigNamespace: webApp.Namespace, LabelAppConfigName: webApp.Name}}}
	mw.Status.Conditions = []metav1.Condition{cond(workv1.WorkApplied, metav1.ConditionTrue, ""), cond(workv1.WorkAvailable, metav1.ConditionTrue, "")}
	mw.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
		ResourceMeta: workv1.ManifestResourceMeta{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Name: "web", Namespace: "default"},
		Conditions: []metav1.Condition{
			cond(workv1.ManifestApplied, metav1.ConditionTrue, ""), cond(workv1.ManifestAvailable, metav1.ConditionTrue, ""),
			cond("Progressing", progressing, msg), cond("Degraded", degraded, msg),
		},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
			{Name: "ReadyReplicas", Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To(int64(2))}}}},
	}}
	return mw
}

// A fleet of 10,000 clusters: the status counts them all, lists the first clusters that are not fine
// by name (with their manifests, messages cut), counts the rest, and stays far below etcd's limit
// however many clusters are fine or not.
func TestStatusOfAFleetIsBoundedAndCountsEveryCluster(t *testing.T) {
	const clusters = 10000
	current := map[string]bool{"Deployment/web": true}
	for _, tc := range []struct {
		name                     string
		health                   func(i int) v1alpha2.Health
		healthy, listed, omitted int
		firstListed              string
		wantListedHealth         v1alpha2.Health
	}{
		{"all healthy", func(int) v1alpha2.Health { return v1alpha2.Healthy }, clusters, 0, 0, "", ""},
		{"every 7th degraded", func(i int) v1alpha2.Health {
			if i%7 == 0 {
				return v1alpha2.Degraded
			}
			return v1alpha2.Healthy
		}, clusters - (clusters+6)/7, v1alpha2.MaxClustersListed, (clusters+6)/7 - v1alpha2.MaxClustersListed, "c-00000", v1alpha2.Degraded},
		{"all progressing", func(int) v1alpha2.Health { return v1alpha2.Progressing }, 0, v1alpha2.MaxClustersListed, clusters - v1alpha2.MaxClustersListed, "c-00000", v1alpha2.Progressing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The cache hands the works over in no particular order: here, the last cluster first.
			var works []*workv1.ManifestWork
			for i := clusters - 1; i >= 0; i-- {
				name := fmt.Sprintf("c-%05d", i)
				works = append(works, reportedWork(name, tc.health(i), 4096))
			}
			verdicts := newWorkSummaries(nil)
			for _, mw := range works {
				verdicts.observe(nil, mw)
			}
			summary, listed, omitted, _ := verdicts.summarize(webApp, current, nil)
			want := v1alpha2.Summary{Clusters: clusters, Applied: fmt.Sprintf("%d/%d", clusters, clusters), Available: fmt.Sprintf("%d/%d", clusters, clusters),
				Healthy: fmt.Sprintf("%d/%d", tc.healthy, clusters)}
			if *summary != want {
				t.Errorf("summary %+v, want %+v", *summary, want)
			}
			if len(listed) != tc.listed || int(omitted) != tc.omitted {
				t.Errorf("%d clusters listed and %d omitted, want %d and %d", len(listed), omitted, tc.listed, tc.omitted)
			}
			for i, cs := range listed {
				if i > 0 && listed[i-1].Name >= cs.Name {
					t.Errorf("listed out of order: %s before %s", listed[i-1].Name, cs.Name)
				}
				if cs.Health != tc.wantListedHealth || len(cs.Manifests) != 1 || cs.Manifests[0].Health != tc.wantListedHealth ||
					len(cs.Manifests[0].Message) > v1alpha2.MaxMessageLength || !strings.Contains(cs.Manifests[0].Message, "cut") {
					t.Errorf("listed %s: %+v, want %s with its manifest and a message cut to %d bytes", cs.Name, cs, tc.wantListedHealth, v1alpha2.MaxMessageLength)
				}
			}
			if len(listed) > 0 && listed[0].Name != tc.firstListed {
				t.Errorf("first listed %s, want %s", listed[0].Name, tc.firstListed)
			}
			status := v1alpha2.ApplicationConfigurationStatus{Summary: summary, Clusters: listed, OmittedClusters: omitted}
			raw, err := json.Marshal(status)
			if err != nil {
				t.Fatal(err)
			}
			if len(raw) > 100<<10 {
				t.Errorf("status of %d bytes, want under 100 KiB", len(raw))
			}
			t.Logf("status of %d clusters: %d bytes", clusters, len(raw))
		})
	}
}

// A listed cluster shows its manifests that are not fine, at most MaxManifestsListed, and counts the
// rest; an earlier revision's workload kept for a rollout is not counted against it.
func TestNotFineEntryListsSomeManifests(t *testing.T) {
	mw := reportedWork("c1", v1alpha2.Degraded, 10)
	one := mw.Status.ResourceStatus.Manifests[0]
	mw.Status.ResourceStatus.Manifests = nil
	current := map[string]bool{}
	for i := range 8 {
		m := *one.DeepCopy()
		m.ResourceMeta.Ordinal, m.ResourceMeta.Name = int32(i), fmt.Sprintf("web-%d", i)
		current["Deployment/"+m.ResourceMeta.Name] = i != 0 // web-0 is an earlier revision's
		mw.Status.ResourceStatus.Manifests = append(mw.Status.ResourceStatus.Manifests, m)
	}
	cs := listedCluster(clusterStatus(mw, current, true), current)
	if len(cs.Manifests) != v1alpha2.MaxManifestsListed || cs.OmittedManifests != 7-v1alpha2.MaxManifestsListed || cs.Manifests[0].Name != "web-1" {
		t.Errorf("listed %d manifests from %s, %d omitted; want %d from web-1, %d omitted", len(cs.Manifests), cs.Manifests[0].Name, cs.OmittedManifests,
			v1alpha2.MaxManifestsListed, 7-v1alpha2.MaxManifestsListed)
	}
}

// A Ready message naming thousands of clusters is cut to what a condition takes.
func TestReadyMessageFitsACondition(t *testing.T) {
	var failed []string
	for i := range 5000 {
		failed = append(failed, fmt.Sprintf("cluster c-%05d: create ManifestWork: the server is on fire", i))
	}
	cond, notReady := delivery{failed: failed}.notReady(5000)
	if !notReady || !strings.HasPrefix(cond.Message, "ManifestWorks not written on 5000 of 5000 clusters: cluster c-00000") {
		t.Fatalf("condition %+v, want it to count and name the failures", cond)
	}
	if got := capConditionMessage(cond.Message); len(got) > maxConditionMessage || !strings.HasSuffix(got, "say more)") {
		t.Errorf("message of %d bytes ending %q, want at most %d, saying it was cut", len(got), got[len(got)-40:], maxConditionMessage)
	}
}
