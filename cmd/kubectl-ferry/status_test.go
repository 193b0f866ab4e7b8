package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/internal/statusview"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/hub"
	"github.com/ferry-mc/ferry/pkg/registration"
)

const greeting = `
apiVersion: v1
kind: ConfigMap
metadata: {name: greeting, namespace: status-demo}
data: {message: hi}
`

// A Deployment whose pods no node can take: it never becomes ready.
const stuck = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: stuck, namespace: status-demo}
spec:
  replicas: 1
  selector: {matchLabels: {app: stuck}}
  template:
    metadata: {labels: {app: stuck}}
    spec:
      nodeSelector: {ferry.io/test-no-such-node: "true"}
      containers: [{name: web, image: nginx:1.27}]
`

// kubectl ferry against a real hub and a spoke with the real agent (and the hub controllers, for an
// AppConfig): the rows are what the agent reported, -o json|yaml carry the same data model, --watch
// prints again when the status changes, and --until-healthy returns once healthy or fails at its
// timeout naming what is not.
func TestKubectlFerryOnARealHub(t *testing.T) {
	env := localcluster.StartForTest(t, localcluster.Options{Spokes: []localcluster.ClusterSpec{{Name: "cluster1", ControllerManager: true}}})
	if err := env.RegisterSpokes(t.Context()); err != nil {
		t.Fatal(err)
	}
	// ferry-hub delivers the AppConfigs of default only to the clusters of the sets bound to it.
	if err := env.Hub.BindGlobalClusterSet(t.Context(), "default"); err != nil {
		t.Fatal(err)
	}
	runAgent(t, env, "cluster1")
	runHub(t, env)
	works, err := workclient.NewForConfig(env.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := env.Hub.Kubeconfig
	ctx := t.Context()

	hello := manifestWork(t, "hello", `{apiVersion: v1, kind: Namespace, metadata: {name: status-demo}}`, greeting)
	hello.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{
		ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "status-demo", Name: "greeting"},
		UpdateStrategy:     &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply},
		FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType,
			JsonPaths: []workv1.JsonPath{{Name: "message", Path: ".data.message"}}}},
	}}
	if _, err := works.WorkV1().ManifestWorks("cluster1").Create(ctx, hello, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("status work --until-healthy returns once a ConfigMap is healthy, and prints a row per manifest", func(t *testing.T) {
		var out syncBuffer
		if err := kubectlFerry(ctx, kubeconfig, &out, "status", "work", "hello", "-n", "cluster1", "--until-healthy", "--timeout", "60s"); err != nil {
			t.Fatalf("%v; it printed:\n%s", err, out.String())
		}
		text := out.String()
		checkRows(t, text, lastTable(t, text, "MANIFESTWORK"), []string{"hello", "cluster1", "True", "True", "Healthy"})
		checkRows(t, text, lastTable(t, text, "KIND"),
			[]string{"Namespace", "status-demo", "Update", "True", "True", "Healthy", "-", "-"},
			[]string{"ConfigMap", "status-demo/greeting", "ServerSideApply", "True", "True", "Healthy", "-", "message=hi"})
	})

	t.Run("status work -o json is the documented data model", func(t *testing.T) {
		var out syncBuffer
		if err := kubectlFerry(ctx, kubeconfig, &out, "status", "work", "hello", "-n", "cluster1", "-o", "json"); err != nil {
			t.Fatal(err)
		}
		docs := decodeJSONStream[statusview.Work](out.String())
		if len(docs) != 1 {
			t.Fatalf("%d JSON documents, want 1:\n%s", len(docs), out.String())
		}
		w := docs[0]
		if w.Cluster != "cluster1" || w.Name != "hello" || !w.Healthy || w.Health != v1alpha2.Healthy || len(w.Manifests) != 2 {
			t.Fatalf("work %+v, want cluster1/hello healthy with two manifests", w)
		}
		cm := w.Manifests[1]
		if cm.Ordinal != 1 || cm.Kind != "ConfigMap" || cm.Strategy != "ServerSideApply" || cm.Applied != metav1.ConditionTrue ||
			len(cm.Feedback) != 1 || cm.Feedback[0] != (v1alpha2.FeedbackValue{Name: "message", Value: "hi"}) {
			t.Errorf("ConfigMap %+v, want ordinal 1, ServerSideApply, applied, feedback message=hi", cm)
		}
	})

	t.Run("status work --watch prints the view again when the agent reports a change", func(t *testing.T) {
		watchCtx, stop := context.WithCancel(ctx)
		var out syncBuffer
		done := make(chan error, 1)
		go func() {
			done <- kubectlFerry(watchCtx, kubeconfig, &out, "status", "work", "hello", "-n", "cluster1", "--watch", "-o", "json")
		}()
		t.Cleanup(stop) // when a step below fails
		poll(t, "the first view printed", func(context.Context) (bool, error) {
			return len(decodeJSONStream[statusview.Work](out.String())) == 1, nil
		})
		poll(t, "the ConfigMap's message changed in the work", func(ctx context.Context) (bool, error) {
			mw, err := works.WorkV1().ManifestWorks("cluster1").Get(ctx, "hello", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			mw.Spec.Workload.Manifests[1].Raw = []byte(strings.Replace(string(mw.Spec.Workload.Manifests[1].Raw), `"hi"`, `"hello again"`, 1))
			_, err = works.WorkV1().ManifestWorks("cluster1").Update(ctx, mw, metav1.UpdateOptions{})
			return err == nil, nil
		})
		poll(t, "a view with the new feedback printed", func(context.Context) (bool, error) {
			docs := decodeJSONStream[statusview.Work](out.String())
			if len(docs) == 0 || len(docs[len(docs)-1].Manifests) != 2 {
				return false, nil
			}
			last := docs[len(docs)-1].Manifests[1]
			return len(last.Feedback) == 1 && last.Feedback[0].Value == "hello again" && last.Health == v1alpha2.Healthy, nil
		})
		stop()
		if err := <-done; err != nil {
			t.Errorf("--watch ended with %v when interrupted, want no error", err)
		}
	})

	t.Run("status work --until-healthy fails at --timeout naming a Deployment no node can take", func(t *testing.T) {
		if _, err := works.WorkV1().ManifestWorks("cluster1").Create(ctx, manifestWork(t, "stuck", stuck), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Wait for the agent's verdict first, so that the failure below is about health, not about a
		// report still on its way.
		poll(t, "the agent reports the Deployment Progressing", func(ctx context.Context) (bool, error) {
			mw, err := works.WorkV1().ManifestWorks("cluster1").Get(ctx, "stuck", metav1.GetOptions{})
			if err != nil || len(mw.Status.ResourceStatus.Manifests) != 1 {
				return false, err
			}
			return meta.IsStatusConditionTrue(mw.Status.ResourceStatus.Manifests[0].Conditions, workv1.ManifestProgressing), nil
		})
		var out syncBuffer
		began := time.Now()
		err := kubectlFerry(ctx, kubeconfig, &out, "status", "work", "stuck", "-n", "cluster1", "--until-healthy", "--timeout", "3s")
		if err == nil {
			t.Fatalf("--until-healthy returned success for a Deployment that cannot run; it printed:\n%s", out.String())
		}
		for _, want := range []string{"ManifestWork cluster1/stuck is not healthy after 3s", "cluster1: Deployment status-demo/stuck", "health Progressing"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		if waited := time.Since(began); waited < 3*time.Second {
			t.Errorf("gave up after %s, before its timeout", waited)
		}
		checkRows(t, out.String(), lastTable(t, out.String(), "MANIFESTWORK"), []string{"stuck", "cluster1", "True", "True", "Progressing"})
	})

	t.Run("status appconfig --until-healthy follows an AppConfig the hub delivers; -o yaml", func(t *testing.T) {
		hubClient, err := client.New(env.Hub.Config, client.Options{Scheme: mustScheme(t)})
		if err != nil {
			t.Fatal(err)
		}
		component := &v1alpha2.Component{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "default"}, Spec: v1alpha2.ComponentSpec{
			Workload: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","data":{"mode":"on"}}`)}}}
		app := &v1alpha2.ApplicationConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "default"},
			Spec: v1alpha2.ApplicationConfigurationSpec{Placement: &v1alpha2.Placement{Clusters: []string{"cluster1"}},
				Components: []v1alpha2.ApplicationConfigurationComponent{{ComponentName: "settings"}}}}
		for _, o := range []client.Object{component, app} {
			if err := hubClient.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		var out syncBuffer
		if err := kubectlFerry(ctx, kubeconfig, &out, "status", "appconfig", "settings", "-n", "default", "--watch", "--until-healthy", "--timeout", "60s"); err != nil {
			t.Fatalf("%v; it printed:\n%s", err, out.String())
		}
		text := out.String()
		checkRows(t, text, lastTable(t, text, "APPCONFIG"), []string{"default/settings", "True", "1", "1/1", "1/1", "1/1", "-"})
		rows := lastTable(t, text, "CLUSTER")
		if len(rows) != 1 || len(rows[0]) < 7 || !slices.Equal(rows[0][:7], []string{"cluster1", "ConfigMap", "default/settings", "Update", "True", "True", "Healthy"}) {
			t.Errorf("manifest rows %q, want the ConfigMap on cluster1, applied, available, healthy:\n%s", rows, text)
		}

		out = syncBuffer{}
		if err := kubectlFerry(ctx, kubeconfig, &out, "status", "appconfig", "settings", "-n", "default", "-o", "yaml"); err != nil {
			t.Fatal(err)
		}
		var view statusview.AppConfig
		if err := yaml.Unmarshal([]byte(out.String()), &view); err != nil {
			t.Fatalf("-o yaml: %v\n%s", err, out.String())
		}
		if !view.Healthy || view.Ready != metav1.ConditionTrue || len(view.Clusters) != 1 || view.Clusters[0].Cluster != "cluster1" ||
			view.Clusters[0].Name != "default.settings" || len(view.Clusters[0].Manifests) != 1 {
			t.Errorf("-o yaml: %+v, want healthy, ready, one ConfigMap on cluster1 in work default.settings", view)
		}
	})

	t.Run("clusters: joined, available, who registered them, how many works", func(t *testing.T) {
		clusters, err := clusterclient.NewForConfig(env.Hub.Config)
		if err != nil {
			t.Fatal(err)
		}
		// A cluster as `ferry-hub clusters add` leaves it before its agent runs: ferry-hub says why it
		// is not available.
		registered := &clusterv1.ManagedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster2", Labels: map[string]string{registration.RegisteredByLabel: registration.RegisteredByFerry}},
			Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
		}
		if _, err := clusters.ClusterV1().ManagedClusters().Create(ctx, registered, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var view statusview.Clusters
		poll(t, "ferry-hub's verdict on cluster2 shown", func(ctx context.Context) (bool, error) {
			var out syncBuffer
			if err := kubectlFerry(ctx, kubeconfig, &out, "clusters", "-o", "json"); err != nil {
				return false, err
			}
			docs := decodeJSONStream[statusview.Clusters](out.String())
			if len(docs) != 1 || len(docs[0].Clusters) != 2 {
				return false, nil
			}
			view = docs[0]
			return strings.Contains(view.Clusters[1].Message, "No ferry-agent has renewed"), nil
		})
		want := []statusview.Cluster{
			{Name: "cluster1", Joined: metav1.ConditionUnknown, Available: metav1.ConditionUnknown, RegisteredBy: statusview.RegisteredByOther, Works: 3},
			{Name: "cluster2", Joined: metav1.ConditionUnknown, Available: metav1.ConditionUnknown, RegisteredBy: registration.RegisteredByFerry, Works: 0},
		}
		for i, c := range view.Clusters {
			c.Message = ""
			if c != want[i] {
				t.Errorf("cluster %+v, want %+v", c, want[i])
			}
		}
		var out syncBuffer
		if err := kubectlFerry(ctx, kubeconfig, &out, "clusters"); err != nil {
			t.Fatal(err)
		}
		rows := lastTable(t, out.String(), "NAME")
		if len(rows) != 2 || !slices.Equal(rows[1][:6], []string{"cluster2", "Unknown", "Unknown", "ferry-hub", "0", "No"}) {
			t.Errorf("rows %q, want cluster2 by ferry-hub with ferry-hub's message:\n%s", rows, out.String())
		}
	})
}

func mustScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s, err := hub.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
