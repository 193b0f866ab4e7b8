package hub_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/render"
)

// Health on the hub: each cluster's entry and each manifest says Healthy, Progressing or Degraded from
// the agents' conditions, and the summary counts HEALTHY clusters. A Deployment whose pods no node can
// take is Progressing with kstatus's message, then Degraded once its progress deadline passes, and
// Healthy on both clusters once its selector is fixed; a ConfigMap is Healthy.
func TestAppConfigShowsHealthPerClusterAndManifest(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	config := &v1alpha2.Component{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: f.ns}, Spec: v1alpha2.ComponentSpec{
		Workload: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","data":{"mode":"on"}}`)}}}
	f.mustCreate(f.hub, config)
	f.createApp(f.appConfig("settings", onClusters(clusters...), v1alpha2.ApplicationConfigurationComponent{ComponentName: "settings"}))
	// Fine everywhere: counted, and no cluster listed.
	f.waitApp("settings", "HEALTHY 2/2, no cluster listed", func(a *v1alpha2.ApplicationConfiguration) bool {
		return a.Status.Summary != nil && a.Status.Summary.Healthy == "2/2" && len(a.Status.Clusters) == 0
	})

	// Pods no node can take, and ten seconds to make progress.
	stuck := f.webComponent("stuck", "nginx:1")
	stuck.Spec.Workload.Raw = []byte(strings.Replace(string(stuck.Spec.Workload.Raw), `"spec":{"replicas":1,`,
		`"spec":{"replicas":1,"progressDeadlineSeconds":10,`, 1))
	stuck.Spec.Workload.Raw = []byte(strings.Replace(string(stuck.Spec.Workload.Raw), `"spec":{"containers"`,
		`"spec":{"nodeSelector":{"ferry.io/test-no-such-node":"true"},"containers"`, 1))
	f.mustCreate(f.hub, stuck)
	f.createApp(f.appConfig("stuck", onClusters(clusters...), v1alpha2.ApplicationConfigurationComponent{ComponentName: "stuck"}))
	app := f.waitApp("stuck", "Progressing on both clusters", func(a *v1alpha2.ApplicationConfiguration) bool {
		for _, c := range clusters {
			if cs := clusterStatus(a, c); cs == nil || cs.Health != v1alpha2.Progressing {
				return false
			}
		}
		return a.Status.Summary.Healthy == "0/2"
	})
	if m := manifestStatus(app, "cluster1", "Deployment", "stuck"); m == nil || m.Health != v1alpha2.Progressing || m.Message == "" {
		t.Errorf("the stuck Deployment while progressing: %+v, want Progressing with kstatus's message", m)
	}
	app = f.waitApp("stuck", "Degraded on both clusters past the progress deadline", func(a *v1alpha2.ApplicationConfiguration) bool {
		for _, c := range clusters {
			if cs := clusterStatus(a, c); cs == nil || cs.Health != v1alpha2.Degraded {
				return false
			}
		}
		return true
	})
	if m := manifestStatus(app, "cluster2", "Deployment", "stuck"); m == nil || !strings.Contains(m.Message, "Progress deadline exceeded") {
		t.Errorf("the stuck Deployment past its deadline: %+v, want kstatus's message", m)
	}
	if app.Status.Summary.Healthy != "0/2" || app.Status.Summary.Available != "2/2" {
		t.Errorf("summary %+v: want HEALTHY 0/2 while AVAILABLE (exists) stays 2/2", app.Status.Summary)
	}

	// Fixing the selector heals it: the spokes' nodes run the pods, and both clusters turn Healthy.
	f.updateComponent("stuck", func(c *v1alpha2.Component) {
		w := &unstructured.Unstructured{}
		if err := w.UnmarshalJSON(c.Spec.Workload.Raw); err != nil {
			t.Fatal(err)
		}
		unstructured.RemoveNestedField(w.Object, "spec", "template", "spec", "nodeSelector")
		raw, err := w.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		c.Spec.Workload.Raw = raw
	})
	f.waitApp("stuck", "HEALTHY 2/2 once the pods can run, no cluster listed", func(a *v1alpha2.ApplicationConfiguration) bool {
		return a.Status.Summary != nil && a.Status.Summary.Healthy == "2/2" && len(a.Status.Clusters) == 0
	})
}
