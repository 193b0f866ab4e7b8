package hub

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// What an AppConfig's status says of drift: the objects its agents put back for the generation of the
// work the cluster was delivered, among the objects rendered now (an earlier revision's workload kept
// for a rollout is not counted, nor is drift reported for an earlier generation); each with as many
// managers and fields as the status lists, the rest of the fields counted; the latest first, objects
// changed at the same second by cluster; at most the limit; nothing at all when nothing drifted.
func TestDriftOfTheObjectsRenderedNow(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 23, 50, 0, 0, time.UTC)
	current := map[string]bool{"Deployment/web": true, "ConfigMap/settings": true}
	work := func(cluster string) *workv1.ManifestWork {
		mw := reportedWork(cluster, v1alpha2.Healthy, 0)
		web := mw.Status.ResourceStatus.Manifests[0]
		settings, earlier := *web.DeepCopy(), *web.DeepCopy()
		settings.ResourceMeta = workv1.ManifestResourceMeta{Ordinal: 1, Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Name: "settings", Namespace: "default"}
		earlier.ResourceMeta.Ordinal, earlier.ResourceMeta.Name = 2, "web-v1" // an earlier revision's workload
		mw.Status.ResourceStatus.Manifests = append(mw.Status.ResourceStatus.Manifests, settings, earlier)
		return mw
	}
	edit := func(at time.Duration) workreport.Drift {
		return workreport.Drift{Count: 2, Managers: []string{"kubectl-edit"}, Fields: []string{".spec.replicas"}, Time: t0.Add(at)}
	}

	c1 := work("c1")
	many := workreport.Drift{Count: 7, Managers: []string{"kubectl-edit", "helm", "argocd", "kubectl-client-side-apply"},
		Fields: []string{".a", ".b", ".c", ".d", ".e", ".f", ".g"}, MoreFields: 3, Time: t0.Add(2 * time.Second)}
	driftOn(c1, 0, many, c1.Generation)
	driftOn(c1, 1, edit(time.Hour), c1.Generation-1) // before the delivery of the current generation
	driftOn(c1, 2, edit(time.Hour), c1.Generation)   // the earlier revision's workload
	objects := driftedObjectsOf(c1, current)
	want := v1alpha2.DriftedObject{Cluster: "c1", Kind: "Deployment", Namespace: "default", Name: "web",
		Managers: []string{"kubectl-edit", "helm", "argocd"}, Fields: []string{".a", ".b", ".c", ".d", ".e"}, MoreFields: 5,
		Count: 7, Time: metav1.NewTime(t0.Add(2 * time.Second))}
	if len(objects) != 1 || !reflect.DeepEqual(objects[0].object, want) {
		t.Fatalf("drifted objects of c1: %+v, want only %+v", objects, want)
	}
	if d := driftOf(c1, current); d.objects != 1 || !d.latest.Equal(t0.Add(2*time.Second)) {
		t.Errorf("drift of c1: %+v, want 1 object changed at %v", d, t0.Add(2*time.Second))
	}

	c2, c3, c4 := work("c2"), work("c3"), work("c4")
	driftOn(c2, 1, edit(2*time.Second), c2.Generation) // the same second as c1's
	driftOn(c3, 1, edit(0), c3.Generation)             // earlier
	latest := latestDrifted(driftedObjectsOfAll([]*workv1.ManifestWork{c4, c3, c2, c1}, current), 2)
	if len(latest) != 2 || latest[0].Cluster != "c1" || latest[1].Cluster != "c2" || latest[1].Name != "settings" {
		t.Errorf("the latest 2: %+v, want c1's Deployment web, then c2's ConfigMap settings", latest)
	}
	if drift := driftStatus(0, 0, latestDrifted(driftedObjectsOfAll([]*workv1.ManifestWork{c4}, current), 5)); drift != nil {
		t.Errorf("drift of a work that never drifted: %+v, want none", drift)
	}
}

// An AppConfig's Drifted event is for a drift report the status did not show: an object newly listed,
// or listed again with another count or time; not one listed as it was, nor one no longer listed.
func TestNewlyDriftedAreTheReportsTheStatusDidNotShow(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 28, 23, 50, 53, 0, time.UTC))
	object := func(cluster, name string, count int32, when metav1.Time) v1alpha2.DriftedObject {
		return v1alpha2.DriftedObject{Cluster: cluster, Kind: "ConfigMap", Namespace: "shop", Name: name,
			Managers: []string{"kubectl-edit"}, Fields: []string{".data.k"}, Count: count, Time: when}
	}
	status := func(objects ...v1alpha2.DriftedObject) *v1alpha2.DriftStatus {
		return &v1alpha2.DriftStatus{Clusters: 1, Objects: int32(len(objects)), Latest: objects}
	}
	later := metav1.NewTime(at.Add(time.Minute))
	for _, c := range []struct {
		name      string
		was, now  *v1alpha2.DriftStatus
		announced []v1alpha2.DriftedObject
	}{
		{"no drift", nil, nil, nil},
		{"a first report", nil, status(object("c1", "a", 1, at)), []v1alpha2.DriftedObject{object("c1", "a", 1, at)}},
		{"the same report", status(object("c1", "a", 1, at)), status(object("c1", "a", 1, at)), nil},
		{"the count grew", status(object("c1", "a", 1, at)), status(object("c1", "a", 2, later)), []v1alpha2.DriftedObject{object("c1", "a", 2, later)}},
		{"changed at another time", status(object("c1", "a", 1, at)), status(object("c1", "a", 1, later)), []v1alpha2.DriftedObject{object("c1", "a", 1, later)}},
		{"the same object on another cluster", status(object("c1", "a", 1, at)), status(object("c2", "a", 1, at), object("c1", "a", 1, at)),
			[]v1alpha2.DriftedObject{object("c2", "a", 1, at)}},
		{"drift gone", status(object("c1", "a", 1, at)), nil, nil},
	} {
		if got := newlyDrifted(c.was, c.now); !reflect.DeepEqual(got, c.announced) {
			t.Errorf("%s: newly drifted %+v, want %+v", c.name, got, c.announced)
		}
	}
	if note := driftNote(object("c1", "a", 2, at)); note != "ConfigMap shop/a on cluster c1 was changed by kubectl-edit (.data.k) and put back by its agent; 2 times so far" {
		t.Errorf("note %q", note)
	}
}
