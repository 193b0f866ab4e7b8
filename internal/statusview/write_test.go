package statusview

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// demoWork is a work of a ConfigMap, healthy, and a Deployment on its way, with feedback.
func demoWork(t *testing.T) *workv1.ManifestWork {
	mw := reported(work(t, "cluster1", 1, configMap, deployment), healthyReport(configMap, 0, 1), with(healthyReport(deployment, 1, 1),
		cond(workv1.ManifestProgressing, T, 1, "ResourceInProgress", "Deployment does not have minimum availability.\nAvailable: 0/2, and a long tail of words")))
	mw.Status.ResourceStatus.Manifests[1].StatusFeedbacks.Values = []workv1.FeedbackValue{intFeedback("ReadyReplicas", 0), intFeedback("Replicas", 2)}
	mw.Spec.ManifestConfigs = []workv1.ManifestConfigOption{strategy(configMap, workv1.UpdateStrategyTypeCreateOnly)}
	return mw
}

func write(t *testing.T, format string, v View) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, format, v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func checkText(t *testing.T, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("printed:\n%s\nwant:\n%s", got, want)
	}
}

func TestWorkTable(t *testing.T) {
	checkText(t, write(t, FormatTable, ForWork(demoWork(t))), `MANIFESTWORK   CLUSTER    APPLIED   AVAILABLE   HEALTH
hello          cluster1   True      True        Progressing

KIND         NAMESPACE/NAME   STRATEGY     APPLIED   AVAILABLE   HEALTH        REASON/MESSAGE                                                 FEEDBACK
ConfigMap    hello/greeting   CreateOnly   True      True        Healthy       -                                                              -
Deployment   hello/web        Update       True      True        Progressing   ResourceInProgress: Deployment does not have minimum avai...   ReadyReplicas=0,Replicas=2
`)
}

func TestAppConfigTable(t *testing.T) {
	t.Run("per cluster, per manifest, with the counts of the clusters", func(t *testing.T) {
		// The AppConfig renders only the Deployment: the ConfigMap of demoWork is shown as an earlier
		// revision, not counted.
		healthy := reported(work(t, "cluster2", 1, deployment), healthyReport(deployment, 0, 1))
		view := ForAppConfig(appConfig(1, 1, T, ""), []workv1.ManifestWork{*healthy, *demoWork(t)})
		checkText(t, write(t, FormatTable, view), `APPCONFIG           READY   CLUSTERS   APPLIED   AVAILABLE   HEALTHY   MESSAGE
default/hello-app   True    2          2/2       2/2         1/2       -

CLUSTER    KIND         NAMESPACE/NAME   STRATEGY     APPLIED   AVAILABLE   HEALTH        REASON/MESSAGE                                                 FEEDBACK
cluster1   ConfigMap    hello/greeting   CreateOnly   True      True        Healthy       EarlierRevision: an earlier revision kept for a rollout; ...   -
cluster1   Deployment   hello/web        Update       True      True        Progressing   ResourceInProgress: Deployment does not have minimum avai...   ReadyReplicas=0,Replicas=2
cluster2   Deployment   hello/web        Update       True      True        Healthy       -                                                              -
`)
	})
	t.Run("drifted objects, from the AppConfig's status", func(t *testing.T) {
		app := appConfig(1, 1, T, "")
		app.Status.Drift = &v1alpha2.DriftStatus{Clusters: 2, Objects: 3, Latest: []v1alpha2.DriftedObject{
			{Cluster: "cluster2", Kind: "Deployment", Namespace: "hello", Name: "web", Managers: []string{"kubectl-edit", "helm"},
				Fields: []string{".spec.replicas", ".spec.template.spec.containers[0].image"}, MoreFields: 2, Count: 3, Time: metav1.NewTime(time.Date(2026, 11, 28, 23, 50, 53, 0, time.UTC))},
			{Cluster: "cluster1", Kind: "Namespace", Name: "hello", Count: 1, Time: metav1.NewTime(time.Date(2026, 11, 28, 23, 40, 0, 0, time.UTC))},
		}}
		for _, view := range []AppConfig{ForAppConfig(app, nil), ForAppConfigStatus(app)} {
			out := write(t, FormatTable, view)
			_, drift, _ := strings.Cut(out, "\nDrifted")
			drift, _ = strings.CutSuffix(drift, "\n"+StatusOnlyNote+"\n")
			checkText(t, "Drifted"+drift, `Drifted (changed on the cluster and put back): 3 objects on 2 clusters; the latest:
CLUSTER    KIND         NAMESPACE/NAME   CHANGED-BY          FIELDS                                                                COUNT   LAST-CHANGED
cluster2   Deployment   hello/web        kubectl-edit,helm   .spec.replicas,.spec.template.spec.containers[0].image (and 2 more)   3       2026-11-28T23:50:53Z
cluster1   Namespace    hello            -                   -                                                                     1       2026-11-28T23:40:00Z
`)
		}
		if out := write(t, FormatTable, ForAppConfig(appConfig(1, 1, T, ""), nil)); strings.Contains(out, "Drifted") {
			t.Errorf("an AppConfig without drift printed:\n%s", out)
		}
	})
	t.Run("not delivered anywhere: the hub's message, no manifest table", func(t *testing.T) {
		view := ForAppConfig(appConfig(1, 1, F, "component web has no revision recorded yet"), nil)
		checkText(t, write(t, FormatTable, view), `APPCONFIG           READY   CLUSTERS   APPLIED   AVAILABLE   HEALTHY   MESSAGE
default/hello-app   False   0          0/0       0/0         0/0       component web has no revision recorded yet
`)
	})
}

func TestClustersTable(t *testing.T) {
	view := Clusters{Clusters: []Cluster{
		{Name: "cluster1", Joined: T, Available: T, RegisteredBy: "ferry-hub", Works: 2},
		{Name: "cluster2", Joined: T, Available: U, RegisteredBy: RegisteredByOther, Works: 0, Message: "ferry-agent has not renewed the Lease"},
	}}
	checkText(t, write(t, FormatTable, view), `NAME       JOINED   AVAILABLE   REGISTERED-BY   WORKS   MESSAGE
cluster1   True     True        ferry-hub       2       -
cluster2   True     Unknown     other           0       ferry-agent has not renewed the Lease
`)
}

// Scripts read -o json|yaml: the same data model as the table, under the documented field names.
func TestMachineOutput(t *testing.T) {
	view := ForAppConfig(appConfig(1, 1, T, ""), []workv1.ManifestWork{*reported(work(t, "cluster1", 1, deployment), healthyReport(deployment, 0, 1))})
	for _, format := range []string{FormatJSON, FormatYAML} {
		t.Run(format, func(t *testing.T) {
			out := write(t, format, view)
			var generic map[string]any
			var err error
			if format == FormatJSON {
				err = json.Unmarshal([]byte(out), &generic)
			} else {
				err = yaml.Unmarshal([]byte(out), &generic)
			}
			if err != nil {
				t.Fatalf("output is not %s: %v\n%s", format, err, out)
			}
			clusters, _ := generic["clusters"].([]any)
			if generic["healthy"] != true || generic["ready"] != "True" || len(clusters) != 1 {
				t.Fatalf("top level %v, want healthy true, ready True, one cluster", generic)
			}
			cluster, _ := clusters[0].(map[string]any)
			manifests, _ := cluster["manifests"].([]any)
			if cluster["cluster"] != "cluster1" || cluster["health"] != string(v1alpha2.Healthy) || len(manifests) != 1 {
				t.Fatalf("cluster %v, want cluster1, Healthy, one manifest", cluster)
			}
			m, _ := manifests[0].(map[string]any)
			for key, want := range map[string]any{"kind": "Deployment", "namespace": "hello", "name": "web", "strategy": "Update",
				"applied": "True", "available": "True", "health": "Healthy", "group": "apps", "version": "v1"} {
				if m[key] != want {
					t.Errorf("manifest %s = %v, want %v", key, m[key], want)
				}
			}
			// The typed model reads back what was written.
			var back AppConfig
			if format == FormatJSON {
				err = json.Unmarshal([]byte(out), &back)
			} else {
				err = yaml.Unmarshal([]byte(out), &back)
			}
			if err != nil || back.Clusters[0].Manifests[0].Health != v1alpha2.Healthy || !back.Healthy {
				t.Errorf("read back %+v (%v)", back, err)
			}
		})
	}
}

func TestCheckFormat(t *testing.T) {
	for _, ok := range []string{"", "json", "yaml"} {
		if err := CheckFormat(ok); err != nil {
			t.Errorf("CheckFormat(%q): %v", ok, err)
		}
	}
	if err := CheckFormat("wide"); err == nil || !strings.Contains(err.Error(), "want json or yaml") {
		t.Errorf("CheckFormat(wide) = %v, want an error naming the formats", err)
	}
	if err := Write(&bytes.Buffer{}, "wide", Clusters{}); err == nil {
		t.Error("Write in an unknown format succeeded")
	}
}
