package fleetsim

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/hub"
)

// WorkOf keeps what an agent reports on: each manifest's ordinal and identity, the resource the hub
// named in its config, whether feedback is asked, and the replicas a ready workload reports.
func TestWorkOfKeepsWhatTheAgentReportsOn(t *testing.T) {
	mw := hubWork("c7", 2)
	// A manifest without a config: its resource is the conventional plural; without spec.replicas
	// a workload has one.
	mw.Spec.Workload.Manifests = append(mw.Spec.Workload.Manifests,
		workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"shop"}}`)}})
	mw.Spec.ManifestConfigs[0].ResourceIdentifier.Resource = "deployments.special" // what a REST mapper said
	w, err := WorkOf(mw)
	if err != nil {
		t.Fatal(err)
	}
	want := []Manifest{
		{Meta: workv1.ManifestResourceMeta{Ordinal: 0, Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments.special", Name: "web", Namespace: "shop"},
			Feedback: true, Replicas: 2},
		{Meta: workv1.ManifestResourceMeta{Ordinal: 1, Version: "v1", Kind: "Service", Resource: "services", Name: "web", Namespace: "shop"}, Replicas: 1},
		{Meta: workv1.ManifestResourceMeta{Ordinal: 2, Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Name: "cfg", Namespace: "shop"}, Replicas: 1},
	}
	if got := w.Manifests; !reflect.DeepEqual(got, want) {
		t.Errorf("manifests:\n got %+v\nwant %+v", got, want)
	}
	if w.Key() != "c7/shop.web" || w.Generation != 2 || w.Labels["ferry.io/appconfig-name"] != "web" {
		t.Errorf("work %s generation %d labels %v; want c7/shop.web, 2, the hub's labels", w.Key(), w.Generation, w.Labels)
	}
	if w.Revision != "" || w.ReportedGeneration != 0 {
		t.Errorf("a work with no spec hash and no report: revision %q, reported generation %d; want neither", w.Revision, w.ReportedGeneration)
	}
}

// A work carries the revision the hub's spec hash names, and the generation its agent's Applied
// condition reports on.
func TestWorkOfKeepsRevisionAndReportedGeneration(t *testing.T) {
	mw := hubWork("c7", 3)
	mw.Annotations = map[string]string{hub.AnnotationSpecHash: "0123abcd"}
	w, err := WorkOf(mw)
	if err != nil {
		t.Fatal(err)
	}
	mw.Status = Status(w, Healthy, time.Now())
	mw.Generation = 4 // the hub wrote it again since
	if w, err = WorkOf(mw); err != nil {
		t.Fatal(err)
	}
	if w.Revision != "0123abcd" || w.ReportedGeneration != 3 || w.Generation != 4 {
		t.Errorf("revision %q, reported generation %d of %d; want 0123abcd, 3 of 4", w.Revision, w.ReportedGeneration, w.Generation)
	}
}

// A work was written when the API server last recorded a write of it other than of its status: the
// hub's, not the agent's report that followed; its creation when nothing says more.
func TestWorkOfSaysWhenTheWorkWasWritten(t *testing.T) {
	created := time.Date(2026, 11, 24, 21, 0, 0, 0, time.UTC)
	mw := hubWork("c7", 2)
	mw.CreationTimestamp = metav1.NewTime(created)
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(created.Add(d)); return &t }
	mw.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "ferry-hub", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(5 * time.Second)},
		{Manager: "ferry-agent", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: at(9 * time.Second)},
	}
	w, err := WorkOf(mw)
	if err != nil {
		t.Fatal(err)
	}
	if want := created.Add(5 * time.Second); !w.Written.Equal(want) {
		t.Errorf("written %v; want the hub's write at %v", w.Written, want)
	}
	mw.ManagedFields = nil
	if w, err = WorkOf(mw); err != nil || !w.Written.Equal(created) {
		t.Errorf("without managedFields written %v (%v); want its creation %v", w.Written, err, created)
	}
}

func TestWorkOfRefusesAManifestItCannotRead(t *testing.T) {
	mw := hubWork("c7", 1)
	mw.Spec.Workload.Manifests[1].Raw = []byte(`{"apiVersion":`)
	if _, err := WorkOf(mw); err == nil {
		t.Fatal("WorkOf accepted a manifest that is not JSON")
	}
}
