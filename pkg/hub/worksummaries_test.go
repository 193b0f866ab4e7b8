package hub

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// The verdicts kept as works come, change, move between AppConfigs and go give the summary and drift
// that judging every work afresh gives: after every one of thousands of random events on two
// AppConfigs' works (reports of every kind, reports on an older generation, drift reported for the
// work's generation or an earlier one, at the same second as other drift or not, relabels, deletions,
// a second work of an AppConfig on one cluster, a change of what the AppConfig renders), and with works
// this reconcile deleted left out.
func TestVerdictsFollowEveryWorkEvent(t *testing.T) {
	t.Parallel() // no cluster at all: it runs beside the others that need none of the shared clusters
	apps := []types.NamespacedName{{Namespace: "default", Name: "web"}, {Namespace: "team", Name: "api"}}
	currents := []map[string]bool{{"Deployment/web": true}, {"Deployment/web": true, "Service/web": true}, {}, {"Service/web": true}}
	healths := []v1alpha2.Health{v1alpha2.Healthy, v1alpha2.Healthy, v1alpha2.Progressing, v1alpha2.Degraded}
	for seed := range uint64(4) {
		rnd := rand.New(rand.NewPCG(seed, 42))
		verdicts := newWorkSummaries(nil)
		live := map[types.NamespacedName]*workv1.ManifestWork{} // what the cache holds
		current := map[types.NamespacedName]map[string]bool{apps[0]: currents[0], apps[1]: currents[0]}

		// A report on cluster, of any kind, labelled for app.
		report := func(cluster, name string, app types.NamespacedName) *workv1.ManifestWork {
			mw := reportedWork(cluster, healths[rnd.IntN(len(healths))], 30)
			mw.Name = name
			mw.Labels = map[string]string{LabelAppConfigNamespace: app.Namespace, LabelAppConfigName: app.Name}
			switch rnd.IntN(6) {
			case 0: // not reported yet
				mw.Status = workv1.ManifestWorkStatus{}
			case 1: // a report on the generation before: Unknown
				mw.Generation++
			case 2: // not applied
				applied := &mw.Status.ResourceStatus.Manifests[0].Conditions[0]
				applied.Status, applied.Message = metav1.ConditionFalse, "conflict with kubectl on .spec.replicas"
			}
			if rnd.IntN(5) == 0 && len(mw.Status.ResourceStatus.Manifests) > 0 {
				// Drifted, a few times, at one of a few seconds, for this generation or the one before.
				at := time.Date(2026, 11, 28, 23, 50, rnd.IntN(5), 0, time.UTC)
				driftOn(mw, 0, workreport.Drift{Count: 1 + rnd.IntN(3), Managers: []string{"kubectl-edit"}, Fields: []string{".spec.replicas"}, Time: at},
					mw.Generation-int64(rnd.IntN(2)))
			}
			return mw
		}
		driftSeen := false // a drift report listing fewer objects than it counts
		drifts := driftsRead{}
		for step := range 3000 {
			cluster := fmt.Sprintf("c-%02d", rnd.IntN(60))
			app := apps[rnd.IntN(len(apps))]
			name := app.Namespace + "." + app.Name
			if rnd.IntN(10) == 0 {
				name += "-extra" // a second work of the AppConfig on the cluster
			}
			key := types.NamespacedName{Namespace: cluster, Name: name}
			old := live[key]
			switch op := rnd.IntN(10); {
			case op < 6 || old == nil: // created or reported on
				mw := report(cluster, name, app)
				live[key] = mw
				verdicts.observe(old, mw)
			case op < 7: // relabelled: it moves to the other AppConfig
				mw := old.DeepCopy()
				other := apps[0]
				if mw.Labels[LabelAppConfigName] == other.Name {
					other = apps[1]
				}
				mw.Labels = map[string]string{LabelAppConfigNamespace: other.Namespace, LabelAppConfigName: other.Name}
				live[key] = mw
				verdicts.observe(old, mw)
			case op < 9:
				delete(live, key)
				verdicts.observe(old, nil)
			default: // the AppConfig renders something else
				current[app] = currents[rnd.IntN(len(currents))]
			}
			for _, app := range apps {
				var gone map[types.NamespacedName]bool
				if rnd.IntN(4) == 0 {
					gone = map[types.NamespacedName]bool{}
					for k := range live {
						if rnd.IntN(8) == 0 {
							gone[k] = true
						}
					}
				}
				summary, listed, omitted, drift := verdicts.summarize(app, current[app], gone)
				wantSummary, wantListed, wantOmitted, wantDrift := summarizeAfresh(live, app, current[app], gone, drifts)
				if *summary != *wantSummary || !reflect.DeepEqual(listed, wantListed) || omitted != wantOmitted {
					t.Fatalf("seed %d, step %d, %s: summary %+v, listed %v, %d omitted; judged afresh: %+v, %v, %d",
						seed, step, app, *summary, listedWorks(listed), omitted, *wantSummary, listedWorks(wantListed), wantOmitted)
				}
				if !reflect.DeepEqual(drift, wantDrift) {
					t.Fatalf("seed %d, step %d, %s: drift %+v; judged afresh: %+v", seed, step, app, drift, wantDrift)
				}
				driftSeen = driftSeen || (drift != nil && len(drift.Latest) == v1alpha2.MaxDriftedObjectsListed && int(drift.Objects) > len(drift.Latest))
			}
		}
		if !driftSeen {
			t.Errorf("seed %d: never more drifted objects than the status lists; the events do not test the choice of the latest", seed)
		}
	}
}

// driftsRead are the drifted objects of each work (a report, never changed once made) for each set of
// objects rendered: reading every Drifted message of every work afresh on each of thousands of steps
// was most of the test's time.
type driftsRead map[driftsReadKey][]driftedObject

// driftsReadKey is a work and the identity of a set of objects rendered: the test's sets never change.
type driftsReadKey struct {
	work    *workv1.ManifestWork
	current unsafe.Pointer
}

func (r driftsRead) of(mw *workv1.ManifestWork, current map[string]bool) []driftedObject {
	key := driftsReadKey{mw, reflect.ValueOf(current).UnsafePointer()}
	objects, ok := r[key]
	if !ok {
		objects = driftedObjectsOf(mw, current)
		r[key] = objects
	}
	return objects
}

// summarizeAfresh is the summary and drift of app from every live work labelled for it but those in
// gone, each judged now: what workSummaries must give.
func summarizeAfresh(live map[types.NamespacedName]*workv1.ManifestWork, app types.NamespacedName, current map[string]bool,
	gone map[types.NamespacedName]bool, drifts driftsRead) (*v1alpha2.Summary, []v1alpha2.ClusterStatus, int32, *v1alpha2.DriftStatus) {
	var works []*workv1.ManifestWork
	for key, mw := range live {
		if of, _ := appConfigOfLabels(mw); of == app && !gone[key] {
			works = append(works, mw)
		}
	}
	slices.SortFunc(works, func(a, b *workv1.ManifestWork) int {
		return strings.Compare(client.ObjectKeyFromObject(a).String(), client.ObjectKeyFromObject(b).String())
	})
	applied, available, healthy, notFine, drifted := 0, 0, 0, 0, 0
	var listed []v1alpha2.ClusterStatus
	var driftedObjects []driftedObject
	for _, mw := range works {
		if objects := drifts.of(mw, current); len(objects) > 0 {
			drifted, driftedObjects = drifted+1, append(driftedObjects, objects...)
		}
		cs := clusterStatus(mw, current, false)
		applied += count(cs.Applied == metav1.ConditionTrue)
		available += count(cs.Available == metav1.ConditionTrue)
		healthy += count(cs.Health == v1alpha2.Healthy)
		if !cs.Fine() {
			notFine++
			if len(listed) < v1alpha2.MaxClustersListed {
				listed = append(listed, listedCluster(clusterStatus(mw, current, true), current))
			}
		}
	}
	n := len(works)
	summary := &v1alpha2.Summary{Clusters: int32(n), Applied: fmt.Sprintf("%d/%d", applied, n), Available: fmt.Sprintf("%d/%d", available, n),
		Healthy: fmt.Sprintf("%d/%d", healthy, n)}
	drift := driftStatus(drifted, len(driftedObjects), latestDrifted(driftedObjects, v1alpha2.MaxDriftedObjectsListed))
	return summary, listed, int32(notFine - len(listed)), drift
}

// driftOn reports, as an agent does, that manifest i of mw drifted as d, for the work's generation gen.
func driftOn(mw *workv1.ManifestWork, i int, d workreport.Drift, gen int64) {
	meta.SetStatusCondition(&mw.Status.ResourceStatus.Manifests[i].Conditions, metav1.Condition{Type: workreport.ConditionDrifted,
		Status: metav1.ConditionTrue, Reason: workreport.ReasonDriftReverted, Message: workreport.DriftMessage(d), ObservedGeneration: gen})
}

func listedWorks(listed []v1alpha2.ClusterStatus) []string {
	var out []string
	for _, cs := range listed {
		out = append(out, cs.Name+"/"+cs.ManifestWork)
	}
	return out
}

// A shard keeps no verdicts on the works of AppConfigs it does not deliver.
func TestVerdictsKeepOnlyTheShardsAppConfigs(t *testing.T) {
	other := types.NamespacedName{Namespace: "team", Name: "api"}
	verdicts := newWorkSummaries(func(app types.NamespacedName) bool { return app != other })
	mine, theirs := reportedWork("c1", v1alpha2.Healthy, 0), reportedWork("c1", v1alpha2.Healthy, 0)
	theirs.Name, theirs.Labels = "team.api", map[string]string{LabelAppConfigNamespace: other.Namespace, LabelAppConfigName: other.Name}
	verdicts.observe(nil, mine)
	verdicts.observe(nil, theirs)
	if _, ok := verdicts.apps[other]; ok || len(verdicts.apps) != 1 {
		t.Errorf("verdicts kept for %d AppConfigs (theirs: %t), want only this shard's", len(verdicts.apps), ok)
	}
	verdicts.observe(mine, nil)
	if len(verdicts.apps) != 0 {
		t.Errorf("verdicts kept for an AppConfig whose works are all gone: %v", verdicts.apps)
	}
}
