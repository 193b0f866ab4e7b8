package statusview

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// reportedApp is appConfig (Ready True about its generation) with the status the hub writes once the
// clusters reported: summary counts of n clusters, status.placement naming placed, and notFine listed
// as the clusters that are not fine.
func reportedApp(n int32, applied, available, healthy int, placed []string, notFine ...v1alpha2.ClusterStatus) *v1alpha2.ApplicationConfiguration {
	app := appConfig(1, 1, T, "delivered")
	app.Status.Summary = &v1alpha2.Summary{Clusters: n, Applied: fmt.Sprintf("%d/%d", applied, n),
		Available: fmt.Sprintf("%d/%d", available, n), Healthy: fmt.Sprintf("%d/%d", healthy, n)}
	app.Status.Placement = &v1alpha2.PlacementStatus{Clusters: placed, ClusterSetBindings: v1alpha2.ClusterSetBindingsEnforce}
	app.Status.Clusters = notFine
	return app
}

// refusing makes app's placement name refused clusters (count in all) that no bound set holds.
func refusing(app *v1alpha2.ApplicationConfiguration, reason string, count int32, refused ...string) *v1alpha2.ApplicationConfiguration {
	app.Status.Placement.Refused, app.Status.Placement.RefusedClusters = refused, count
	app.Status.Conditions = append(app.Status.Conditions, cond(v1alpha2.ConditionClustersBound, F, app.Generation, reason,
		"the placement names clusters in no ManagedClusterSet bound to namespace default"))
	return app
}

// degradedCluster is cluster as the hub lists it when its Deployment hello/web failed.
func degradedCluster(cluster string) v1alpha2.ClusterStatus {
	return v1alpha2.ClusterStatus{Name: cluster, ManifestWork: "default.hello-app", Applied: T, Available: T, Health: v1alpha2.Degraded,
		Manifests: []v1alpha2.ManifestStatus{{Ordinal: 0, APIVersion: "apps/v1", Kind: "Deployment", Namespace: "hello", Name: "web",
			Applied: T, Available: T, Health: v1alpha2.Degraded, Message: "ProgressDeadlineExceeded: ReplicaSet web-5d has timed out progressing.",
			Feedback: []v1alpha2.FeedbackValue{{Name: "ReadyReplicas", Value: "0"}}}}}
}

func TestForAppConfigStatus(t *testing.T) {
	type clusterRow struct {
		cluster string
		health  v1alpha2.Health
		healthy bool
		listed  int // manifests
	}
	for _, tc := range []struct {
		name         string
		app          *v1alpha2.ApplicationConfiguration
		want         []clusterRow
		wantMore     int32
		wantHealthy  bool
		wantProblems []string // substrings, in order
	}{{
		name:        "healthy everywhere: every cluster of the placement, fine, without manifests",
		app:         reportedApp(2, 2, 2, 2, []string{"cluster1", "cluster2"}),
		want:        []clusterRow{{"cluster1", v1alpha2.Healthy, true, 0}, {"cluster2", v1alpha2.Healthy, true, 0}},
		wantHealthy: true,
	}, {
		name: "a cluster that is not fine, with its manifests as the status gives them",
		app:  reportedApp(2, 2, 2, 1, []string{"cluster1", "cluster2"}, degradedCluster("cluster2")),
		want: []clusterRow{{"cluster1", v1alpha2.Healthy, true, 0}, {"cluster2", v1alpha2.Degraded, false, 1}},
		wantProblems: []string{
			"cluster2: Deployment hello/web (applied True, available True, health Degraded)",
		},
	}, {
		name: "more clusters than the status names: the rest counted",
		app:  reportedApp(25, 25, 25, 25, []string{"cluster1", "cluster2"}),
		want: []clusterRow{{"cluster1", v1alpha2.Healthy, true, 0}, {"cluster2", v1alpha2.Healthy, true, 0}}, wantMore: 23,
		wantHealthy: true,
	}, {
		name: "not-fine clusters the status left out: nothing is known of the unlisted ones",
		app: func() *v1alpha2.ApplicationConfiguration {
			app := reportedApp(30, 30, 30, 8, []string{"cluster1", "cluster2"}, degradedCluster("cluster2"))
			app.Status.OmittedClusters = 21
			return app
		}(),
		want:     []clusterRow{{"cluster1", v1alpha2.HealthUnknown, false, 0}, {"cluster2", v1alpha2.Degraded, false, 1}},
		wantMore: 28,
		wantProblems: []string{
			"cluster2: Deployment hello/web",
			"and 21 more clusters that are not fine",
		},
	}, {
		name: "a listed cluster beyond the placement's first names is shown too, in name order",
		app:  reportedApp(2, 1, 1, 1, []string{"cluster1"}, v1alpha2.ClusterStatus{Name: "cluster0", Applied: U, Available: U, Health: v1alpha2.HealthUnknown}),
		want: []clusterRow{{"cluster0", v1alpha2.HealthUnknown, false, 0}, {"cluster1", v1alpha2.Healthy, true, 0}},
		wantProblems: []string{
			"cluster0: applied Unknown, available Unknown, health Unknown",
		},
	}, {
		name: "counts that are not all healthy, with no cluster listed: the counts say so",
		app:  reportedApp(2, 2, 2, 1, []string{"cluster1", "cluster2"}),
		want: []clusterRow{{"cluster1", v1alpha2.Healthy, true, 0}, {"cluster2", v1alpha2.Healthy, true, 0}},
		wantProblems: []string{
			"the hub counts 2/2 applied, 2/2 available and 1/2 healthy of 2 clusters",
		},
	}, {
		name: "counts of the generation before: not Ready yet, whatever they say",
		app: func() *v1alpha2.ApplicationConfiguration {
			app := reportedApp(1, 1, 1, 1, []string{"cluster1"})
			app.Generation = 2
			return app
		}(),
		want:         []clusterRow{{"cluster1", v1alpha2.Healthy, true, 0}},
		wantProblems: []string{"is not Ready (Unknown): the hub has not rendered generation 2"},
	}, {
		name: "every cluster refused: delivered to none",
		app: refusing(func() *v1alpha2.ApplicationConfiguration {
			app := reportedApp(0, 0, 0, 0, nil)
			app.Status.Conditions[0] = cond("Ready", F, 1, v1alpha2.ReasonClustersNotBound, "delivered to no cluster: the placement names 1 clusters ...")
			return app
		}(), v1alpha2.ReasonClustersNotBound, 1, "cluster9"),
		wantProblems: []string{"is not Ready (False): delivered to no cluster", "is delivered to no cluster"},
	}, {
		name:         "no status yet",
		app:          appConfig(1, 1, T, "delivered"),
		wantProblems: []string{"is delivered to no cluster"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := ForAppConfigStatus(tc.app)
			var rows []clusterRow
			for _, c := range got.Clusters {
				rows = append(rows, clusterRow{c.Cluster, c.Health, c.Healthy, len(c.Manifests)})
			}
			if !slices.Equal(rows, tc.want) {
				t.Errorf("clusters %+v, want %+v", rows, tc.want)
			}
			if !got.StatusOnly || got.MoreClusters != tc.wantMore || got.Healthy != tc.wantHealthy {
				t.Errorf("statusOnly %t, moreClusters %d, healthy %t; want true, %d, %t", got.StatusOnly, got.MoreClusters, got.Healthy, tc.wantMore, tc.wantHealthy)
			}
			problems := got.Problems()
			if len(problems) != len(tc.wantProblems) {
				t.Fatalf("problems %q, want %d like %q", problems, len(tc.wantProblems), tc.wantProblems)
			}
			for i, want := range tc.wantProblems {
				if !strings.Contains(problems[i], want) {
					t.Errorf("problem %d is %q, want it to say %q", i, problems[i], want)
				}
			}
		})
	}
}

func TestForAppConfigStatusKeepsWhatTheStatusSaysOfAManifest(t *testing.T) {
	got := ForAppConfigStatus(reportedApp(1, 1, 1, 0, []string{"cluster2"}, degradedCluster("cluster2"))).Clusters[0]
	if got.Name != "default.hello-app" || got.Applied != T || got.Health != v1alpha2.Degraded || got.Healthy {
		t.Errorf("cluster %+v, want work default.hello-app, applied, Degraded, not healthy", got)
	}
	m := got.Manifests[0]
	want := Manifest{Ordinal: 0, Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "hello", Name: "web",
		Applied: T, Available: T, Health: v1alpha2.Degraded, Message: "ProgressDeadlineExceeded: ReplicaSet web-5d has timed out progressing.",
		Feedback: []v1alpha2.FeedbackValue{{Name: "ReadyReplicas", Value: "0"}}}
	if m.Strategy != "" || m.Reason != "" || !slices.Equal(m.Feedback, want.Feedback) {
		t.Errorf("manifest %+v, want no strategy and no reason (the status has neither), feedback %v", m, want.Feedback)
	}
	m.Feedback, want.Feedback = nil, nil
	if fmt.Sprint(m) != fmt.Sprint(want) {
		t.Errorf("manifest\n%+v\nwant\n%+v", m, want)
	}
	// A work name the status does not give is the one the hub gives every work of the AppConfig.
	if w := ForAppConfigStatus(reportedApp(1, 1, 1, 1, []string{"cluster1"})).Clusters[0]; w.Name != "default.hello-app" {
		t.Errorf("work name %q, want default.hello-app", w.Name)
	}
}

func TestAppConfigStatusTable(t *testing.T) {
	t.Run("the hub's counts, every cluster, the manifests that are not fine, and where the rest is", func(t *testing.T) {
		app := refusing(reportedApp(3, 3, 3, 2, []string{"cluster1", "cluster2", "cluster3"}, degradedCluster("cluster2")),
			v1alpha2.ReasonClustersNotBound, 1, "cluster9")
		app.Status.Clusters[0].OmittedManifests = 2
		checkText(t, write(t, FormatTable, ForAppConfigStatus(app)), `APPCONFIG           READY   CLUSTERS   APPLIED   AVAILABLE   HEALTHY   MESSAGE
default/hello-app   True    3          3/3       3/3         2/3       -

ClustersBound False (ClustersNotBound): 1 cluster of the placement is in no ManagedClusterSet bound to namespace default and gets no ManifestWork: cluster9

CLUSTER    KIND         NAMESPACE/NAME   STRATEGY   APPLIED   AVAILABLE   HEALTH     REASON/MESSAGE                                                 FEEDBACK
cluster1   -            -                -          True      True        Healthy    -                                                              -
cluster2   Deployment   hello/web        -          True      True        Degraded   ProgressDeadlineExceeded: ReplicaSet web-5d has timed out...   ReadyReplicas=0
cluster3   -            -                -          True      True        Healthy    -                                                              -
(cluster2: and 2 more manifests that are not fine)

`+StatusOnlyNote+"\n")
	})
	t.Run("more clusters than named", func(t *testing.T) {
		checkText(t, write(t, FormatTable, ForAppConfigStatus(reportedApp(22, 22, 22, 22, []string{"cluster1", "cluster2"}))), `APPCONFIG           READY   CLUSTERS   APPLIED   AVAILABLE   HEALTHY   MESSAGE
default/hello-app   True    22         22/22     22/22       22/22     -

CLUSTER    KIND   NAMESPACE/NAME   STRATEGY   APPLIED   AVAILABLE   HEALTH    REASON/MESSAGE   FEEDBACK
cluster1   -      -                -          True      True        Healthy   -                -
cluster2   -      -                -          True      True        Healthy   -                -
(and 20 more)

`+StatusOnlyNote+"\n")
	})
	t.Run("delivered to no cluster: Ready's message and the refused clusters, beyond the first 20 too", func(t *testing.T) {
		app := refusing(reportedApp(0, 0, 0, 0, nil), v1alpha2.ReasonClustersNotBound, 23, "cluster1", "cluster2")
		app.Status.Conditions[0] = cond("Ready", F, 1, v1alpha2.ReasonClustersNotBound, "delivered to no cluster: ...")
		checkText(t, write(t, FormatTable, ForAppConfigStatus(app)), `APPCONFIG           READY   CLUSTERS   APPLIED   AVAILABLE   HEALTHY   MESSAGE
default/hello-app   False   0          0/0       0/0         0/0       delivered to no cluster: ...

ClustersBound False (ClustersNotBound): 23 clusters of the placement are in no ManagedClusterSet bound to namespace default and get no ManifestWork: cluster1, cluster2 (and 21 more)

`+StatusOnlyNote+"\n")
	})
}

// The view of a user who may read ManifestWorks shows the clusters the bindings refuse as well; in
// audit mode, as delivered all the same.
func TestAppConfigTableShowsRefusedClusters(t *testing.T) {
	healthy := reported(work(t, "cluster1", 1, deployment), healthyReport(deployment, 0, 1))
	app := refusing(reportedApp(1, 1, 1, 1, []string{"cluster1"}), v1alpha2.ReasonClustersNotBoundAudit, 2, "cluster7", "cluster8")
	view := ForAppConfig(app, []workv1.ManifestWork{*healthy})
	checkText(t, write(t, FormatTable, view), `APPCONFIG           READY   CLUSTERS   APPLIED   AVAILABLE   HEALTHY   MESSAGE
default/hello-app   True    1          1/1       1/1         1/1       -

ClustersBound False (ClustersNotBoundAudit): 2 clusters of the placement are in no ManagedClusterSet bound to namespace default (the hub only audits its bindings, and delivers all the same): cluster7, cluster8

CLUSTER    KIND         NAMESPACE/NAME   STRATEGY   APPLIED   AVAILABLE   HEALTH    REASON/MESSAGE   FEEDBACK
cluster1   Deployment   hello/web        Update     True      True        Healthy   -                -
`)
	if !view.Healthy || view.StatusOnly || view.NotBound == nil || view.NotBound.RefusedClusters != 2 {
		t.Errorf("view %+v, want healthy (refused clusters are no problem of the delivered ones), not status-only, 2 refused", view)
	}
	// Bound everywhere: no line, and the view as it always was.
	if got := ForAppConfig(reportedApp(1, 1, 1, 1, []string{"cluster1"}), []workv1.ManifestWork{*healthy}); got.NotBound != nil {
		t.Errorf("NotBound %+v without a ClustersBound False", got.NotBound)
	}
}

// Scripts tell a status-only view by statusOnly, and find the hub's counts and the refused clusters.
func TestAppConfigStatusMachineOutput(t *testing.T) {
	app := refusing(reportedApp(2, 2, 2, 1, []string{"cluster1", "cluster2"}, degradedCluster("cluster2")), v1alpha2.ReasonClustersNotBound, 1, "cluster9")
	view := ForAppConfigStatus(app)
	for _, format := range []string{FormatJSON, FormatYAML} {
		t.Run(format, func(t *testing.T) {
			out := write(t, format, view)
			var generic map[string]any
			var back AppConfig
			var err error
			if format == FormatJSON {
				err = json.Unmarshal([]byte(out), &generic)
				if err == nil {
					err = json.Unmarshal([]byte(out), &back)
				}
			} else {
				err = yaml.Unmarshal([]byte(out), &generic)
				if err == nil {
					err = yaml.Unmarshal([]byte(out), &back)
				}
			}
			if err != nil {
				t.Fatalf("output is not %s: %v\n%s", format, err, out)
			}
			summary, _ := generic["summary"].(map[string]any)
			notBound, _ := generic["notBound"].(map[string]any)
			if generic["statusOnly"] != true || generic["healthy"] != false || summary["healthy"] != "1/2" ||
				notBound["reason"] != v1alpha2.ReasonClustersNotBound || fmt.Sprint(notBound["refused"]) != "[cluster9]" {
				t.Errorf("top level %v, want statusOnly, not healthy, the hub's summary and cluster9 refused", generic)
			}
			if len(back.Clusters) != 2 || back.Clusters[1].Manifests[0].Health != v1alpha2.Degraded || back.Clusters[1].Manifests[0].Feedback[0].Value != "0" {
				t.Errorf("read back %+v", back)
			}
		})
	}
	// The view of a user who may read works says nothing of these fields.
	out := write(t, FormatJSON, ForAppConfig(appConfig(1, 1, T, ""), nil))
	for _, field := range []string{"statusOnly", "summary", "notBound", "moreClusters", "omittedClusters", "omittedManifests"} {
		if strings.Contains(out, `"`+field+`"`) {
			t.Errorf("-o json of the full view has %q:\n%s", field, out)
		}
	}
}
