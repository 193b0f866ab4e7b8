package hub_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
	"github.com/ferry-mc/ferry/pkg/render"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// recordedEvents are the events hub controllers recorded, in order, as "<reason>: <note>": what a test
// counts exactly, where the API server receives them from the broadcaster's goroutines later.
type recordedEvents struct {
	mu     sync.Mutex
	events []string
}

// withReason are the notes of the events recorded with reason.
func (r *recordedEvents) withReason(reason string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if note, ok := strings.CutPrefix(e, reason+": "); ok {
			out = append(out, note)
		}
	}
	return out
}

// recordingManager gives the hub controllers its manager's event recorder, with every event they
// record also kept in recorded.
type recordingManager struct {
	ctrl.Manager
	recorded *recordedEvents
}

func (m recordingManager) GetEventRecorder(name string) events.EventRecorder {
	return recordingRecorder{EventRecorder: m.Manager.GetEventRecorder(name), recorded: m.recorded}
}

type recordingRecorder struct {
	events.EventRecorder
	recorded *recordedEvents
}

func (r recordingRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.recorded.mu.Lock()
	r.recorded.events = append(r.recorded.events, reason+": "+fmt.Sprintf(note, args...))
	r.recorded.mu.Unlock()
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// An AppConfig gets a Warning Drifted event for each drift report an agent sends: one when a cluster
// first reports an object changed and put back, naming the cluster, the object, the manager, the field
// and the count, and one more when the count grows; reconciling it again with the drift unchanged (an
// edit of its annotations, another cluster's report) adds none.
func TestAppConfigHasAnEventPerDriftReport(t *testing.T) {
	f := setup(t)
	drifting, steady := "drifting-"+f.ns, "steady-"+f.ns
	f.addManagedCluster(drifting, nil)
	f.addManagedCluster(steady, nil)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub, f.settingsComponent("settings", "nginx:1"))
	f.waitLatest("settings", "settings-v1")
	f.createApp(f.appConfig("shop", onClusters(drifting, steady), v1alpha2.ApplicationConfigurationComponent{ComponentName: "settings"}))
	for _, c := range []string{drifting, steady} {
		f.waitWork(c, "shop", "delivered", func(mw *workv1.ManifestWork) bool { return len(mw.Spec.Workload.Manifests) == 1 })
	}

	edited := time.Now().UTC().Truncate(time.Second) // a condition's message keeps seconds
	for count := 1; count <= 2; count++ {
		edit := map[string]workreport.Drift{"settings": {Count: count, Managers: []string{"kubectl-edit"}, Fields: []string{".data.image"},
			Time: edited.Add(time.Duration(count) * time.Second)}}
		f.reportAsAgent(drifting, "shop", edit, 0)
		f.waitApp("shop", fmt.Sprintf("drift counted %d", count), func(a *v1alpha2.ApplicationConfiguration) bool {
			return a.Status.Drift != nil && len(a.Status.Drift.Latest) == 1 && a.Status.Drift.Latest[0].Count == int32(count)
		})
		// The event is recorded before the status that shows the report is written.
		notes := f.hubEvents.withReason(hub.ReasonDrifted)
		if len(notes) != count {
			t.Fatalf("after report %d: Drifted events %q; want %d", count, notes, count)
		}
		want := fmt.Sprintf("ConfigMap %s/settings on cluster %s was changed by kubectl-edit (.data.image) and put back by its agent; %d ", f.ns, drifting, count)
		if !strings.HasPrefix(notes[count-1], want) {
			t.Errorf("Drifted event %q, want it to begin %q", notes[count-1], want)
		}
	}
	f.eventually("both Drifted events on the AppConfig in the API", func(ctx context.Context) (bool, error) {
		list := &eventsv1.EventList{}
		if err := f.hub.List(ctx, list, client.InNamespace(f.ns)); err != nil {
			return false, err
		}
		n := 0
		for _, e := range list.Items {
			if e.Regarding.Name == "shop" && e.Reason == hub.ReasonDrifted && e.Type == "Warning" && strings.Contains(e.Note, drifting) {
				n++
			}
		}
		return n == 2, nil
	})

	// Reconciled again, the drift unchanged: an edit of the AppConfig's annotations, and the other
	// cluster's first report, whose pass writes the status (Applied 2/2) with the same drift.
	reconciles := appConfigReconciles(t)
	f.updateApp("shop", func(a *v1alpha2.ApplicationConfiguration) {
		metav1.SetMetaDataAnnotation(&a.ObjectMeta, "example.com/note", "unrelated")
	})
	f.reportAsAgent(steady, "shop", nil, 0)
	f.waitApp("shop", "the other cluster's report counted", func(a *v1alpha2.ApplicationConfiguration) bool {
		return a.Status.Summary != nil && a.Status.Summary.Applied == "2/2" && a.Status.Drift != nil
	})
	f.eventually("the AppConfig reconciled again", func(context.Context) (bool, error) {
		return appConfigReconciles(t) >= reconciles+2, nil
	})
	if notes := f.hubEvents.withReason(hub.ReasonDrifted); len(notes) != 2 || slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, steady) }) {
		t.Errorf("reconciled again with the drift unchanged: Drifted events %q; want still the 2 about %s", notes, drifting)
	}
}
