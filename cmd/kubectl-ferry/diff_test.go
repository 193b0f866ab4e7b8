package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// `kubectl ferry diff appconfig` against a real hub API server, whose previews and AppConfig status are
// written by the test as ferry-hub and the agents write them: per cluster and object, what would be
// created or each field's live and wanted value, the clusters where nothing would change and those not
// reported yet; one cluster alone; for a tenant who may not list ManifestWorks, the same from
// status.diff, said to be bounded; --wait; and, for an AppConfig that is not report only, the command
// that makes it one.
func TestKubectlFerryDiffAppConfig(t *testing.T) {
	env := localcluster.StartForTest(t, localcluster.Options{})
	ctx := t.Context()
	hubClient, err := client.New(env.Hub.Config, client.Options{Scheme: mustScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	h := &rolloutHub{t: t, client: hubClient, kubeconfig: env.Hub.Kubeconfig}
	create := func(objs ...client.Object) {
		t.Helper()
		for _, o := range objs {
			if err := hubClient.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []string{"east", "west", "north"} {
		create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c}})
	}

	deployment := `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: default}, spec: {template: {spec: {containers: [{name: web, image: "nginx:2"}]}}}}`
	configMap := `{apiVersion: v1, kind: ConfigMap, metadata: {name: web-config, namespace: default}, data: {greeting: hello}}`
	imageDiff := workreport.Diff{Fields: []workreport.FieldChange{
		{Path: ".spec.template.spec.containers[0].image", Live: `"nginx:1"`, Want: `"nginx:2"`}}}
	// preview writes the preview of shop on cluster as ferry-hub writes it and its agent's report, the
	// manifests' diffs in order (none: not reported).
	preview := func(cluster string, diffs ...*workreport.Diff) {
		t.Helper()
		mw := manifestWork(t, v1alpha2.PreviewWorkName("default", "shop"), deployment, configMap)
		mw.Namespace = cluster
		mw.Labels = map[string]string{v1alpha2.LabelPreviewOfNamespace: "default", v1alpha2.LabelPreviewOfName: "shop"}
		mw.Annotations = map[string]string{workreport.AnnotationReportDiff: "true"}
		create(mw)
		if len(diffs) == 0 {
			return
		}
		changing := 0
		for i, d := range diffs {
			c := workreport.DiffCondition(*d)
			c.ObservedGeneration, c.LastTransitionTime = mw.Generation, metav1.Now()
			kind, name := "Deployment", "web"
			if i == 1 {
				kind, name = "ConfigMap", "web-config"
			}
			mw.Status.ResourceStatus.Manifests = append(mw.Status.ResourceStatus.Manifests, workv1.ManifestCondition{
				ResourceMeta: workv1.ManifestResourceMeta{Ordinal: int32(i), Kind: kind, Name: name, Namespace: "default"},
				Conditions:   []metav1.Condition{c}})
			changing += countIf(d.Changes())
		}
		c := workreport.WorkDiffCondition(changing, len(diffs))
		c.ObservedGeneration, c.LastTransitionTime = mw.Generation, metav1.Now()
		mw.Status.Conditions = []metav1.Condition{c}
		if err := hubClient.Status().Update(ctx, mw); err != nil {
			t.Fatal(err)
		}
	}
	preview("east", &imageDiff, &workreport.Diff{Create: true})
	preview("west", &workreport.Diff{}, &workreport.Diff{})
	preview("north")

	h.create("shop", nil)
	app := h.app("shop")
	metav1.SetMetaDataAnnotation(&app.ObjectMeta, v1alpha2.AnnotationReportOnly, "true")
	if err := hubClient.Update(ctx, app); err != nil {
		t.Fatal(err)
	}
	// The status ferry-hub writes of these reports.
	app.Status.Diff = &v1alpha2.DiffStatus{Generation: app.Generation, Clusters: 3, Reported: 2, Pending: []string{"north"}, Changing: 1, Objects: 2,
		Changes: []v1alpha2.ObjectDiff{
			{Cluster: "east", Kind: "Deployment", Namespace: "default", Name: "web",
				Fields: []v1alpha2.FieldDiff{{Path: ".spec.template.spec.containers[0].image", Live: `"nginx:1"`, Want: `"nginx:2"`}}},
			{Cluster: "east", Kind: "ConfigMap", Namespace: "default", Name: "web-config", Create: true}}}
	previewed := metav1.Condition{Type: v1alpha2.ConditionPreviewed, Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonWaitingForReports,
		ObservedGeneration: app.Generation, Message: "so far 2 objects would change on 1 of the 2 clusters reported; 1 of 3 clusters not reported yet: north"}
	meta.SetStatusCondition(&app.Status.Conditions, previewed)
	if err := hubClient.Status().Update(ctx, app); err != nil {
		t.Fatal(err)
	}

	eastChanges := "cluster east:\n  Deployment default/web:\n    .spec.template.spec.containers[0].image: \"nginx:1\" → \"nginx:2\"\n" +
		"  ConfigMap default/web-config: would be created\n"
	t.Run("per cluster and object, from the previews", func(t *testing.T) {
		out := h.mustRun("diff", "appconfig", "shop", "-n", "default")
		t.Logf("kubectl ferry diff appconfig shop:\n%s", out)
		want := fmt.Sprintf("AppConfig default/shop, report only (nothing is delivered), generation %d: ", app.Generation) + previewed.Message + "\n" + eastChanges +
			"cluster north: not reported yet (its agent has not looked at the preview as it is now; is it ferry-agent?)\n" +
			"cluster west: no change (2 objects match the live objects)\n"
		if out != want {
			t.Errorf("printed\n%s\nwant\n%s", out, want)
		}
		out = h.mustRun("diff", "appconfig", "shop", "-n", "default", "--cluster", "west")
		if strings.Contains(out, "east") || !strings.Contains(out, "cluster west: no change") {
			t.Errorf("--cluster west printed\n%s\nwant west alone", out)
		}
	})

	t.Run("a tenant who may not list ManifestWorks: from status.diff, said to be bounded", func(t *testing.T) {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "appconfig-reader", Namespace: "default"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{v1alpha2.SchemeGroupVersion.Group}, Resources: []string{"applicationconfigurations"}, Verbs: []string{"get", "list", "watch"}}}}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob", Namespace: "default"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}}}
		create(role, binding)
		var out string
		poll(t, "bob reads the AppConfig", func(ctx context.Context) (bool, error) {
			var err error
			out, err = h.run("--as", "bob", "diff", "appconfig", "shop", "-n", "default")
			return err == nil, nil
		})
		t.Logf("kubectl ferry diff appconfig shop, as bob:\n%s", out)
		for _, want := range []string{eastChanges, "cluster north: not reported yet\n", "1 of the 3 clusters reported no change\n",
			"(from the AppConfig's status.diff, which names at most 10 objects and 5 fields of each"} {
			if !strings.Contains(out, want) {
				t.Errorf("bob's diff does not say %q:\n%s", want, out)
			}
		}
	})

	t.Run("--wait: until every cluster reported, or the timeout naming those that did not", func(t *testing.T) {
		h.mustFail([]string{"diff", "appconfig", "shop", "-n", "default", "--wait", "--timeout", "2s"},
			"AppConfig default/shop: not every cluster reported on its preview after 2s; waiting for north")
		app := h.app("shop")
		app.Status.Diff.Reported, app.Status.Diff.Pending = 3, nil
		meta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{Type: v1alpha2.ConditionPreviewed, Status: metav1.ConditionTrue,
			Reason: v1alpha2.ReasonWouldChange, ObservedGeneration: app.Generation, Message: "2 objects would change on 1 of 3 clusters"})
		if err := hubClient.Status().Update(ctx, app); err != nil {
			t.Fatal(err)
		}
		out := h.mustRun("diff", "appconfig", "shop", "-n", "default", "--wait", "--timeout", "30s")
		if !strings.Contains(out, ": 2 objects would change on 1 of 3 clusters\n") {
			t.Errorf("--wait printed\n%s\nwant the diff once every cluster reported", out)
		}
	})

	t.Run("an AppConfig that is not report only: how to make it one", func(t *testing.T) {
		h.create("plain", nil)
		h.mustFail([]string{"diff", "appconfig", "plain", "-n", "default"},
			"AppConfig default/plain is delivered, not report only",
			"kubectl annotate applicationconfiguration plain -n default ferry.io/report-only=true",
			"kubectl annotate applicationconfiguration plain -n default ferry.io/report-only-")
	})
}

func countIf(b bool) int {
	if b {
		return 1
	}
	return 0
}
