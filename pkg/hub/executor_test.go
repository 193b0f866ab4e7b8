package hub_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/render"
)

// An AppConfig's executor reaches every cluster's agent through its works: the application may do there
// no more than the ServiceAccount may. The AppConfig lists each cluster as not applied, with the agent's
// message naming the ServiceAccount; once it may, every cluster applies it.
func TestAppConfigExecutorHoldsItsWorksOnEveryCluster(t *testing.T) {
	f := setup(t)
	f.startHub(hubOptions(render.ApplyOnceOff))
	f.mustCreate(f.hub, f.webComponent("web", "nginx:1"))
	f.waitLatest("web", "web-v1")
	for _, name := range clusters {
		f.mustCreate(f.spokes[name], &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: f.ns}})
	}
	app := f.appConfig("shop", onClusters(clusters...), v1alpha2.ApplicationConfigurationComponent{
		ComponentName: "web", ParameterValues: []v1alpha2.ComponentParameterValue{param("image", `"nginx:2"`)}})
	app.Spec.Executor = &v1alpha2.Executor{Subject: v1alpha2.ExecutorSubject{Type: "ServiceAccount",
		ServiceAccount: &v1alpha2.ExecutorServiceAccount{Namespace: f.ns, Name: "deployer"}}}
	f.createApp(app)

	sa := "ServiceAccount " + f.ns + "/deployer"
	f.waitApp("shop", "every cluster not applied, saying the executor may not", func(app *v1alpha2.ApplicationConfiguration) bool {
		if app.Status.Summary == nil || app.Status.Summary.Applied != "0/2" || len(app.Status.Clusters) != len(clusters) {
			return false
		}
		for _, c := range app.Status.Clusters {
			if len(c.Manifests) == 0 || !strings.Contains(c.Manifests[0].Message, sa) {
				return false
			}
		}
		return true
	})
	for _, name := range clusters {
		err := f.spokes[name].Get(t.Context(), client.ObjectKey{Namespace: f.ns, Name: "web"}, &appsv1.Deployment{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("%s: the Deployment the executor may not create: %v, want none", name, err)
		}
	}

	for _, name := range clusters {
		f.mustCreate(f.spokes[name],
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: f.ns}, Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "create", "update", "patch", "delete"}}}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: f.ns},
				RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "deployer"},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "deployer", Namespace: f.ns}}})
	}
	f.waitApp("shop", "applied on every cluster once the executor may", func(app *v1alpha2.ApplicationConfiguration) bool {
		return app.Status.Summary != nil && app.Status.Summary.Applied == "2/2"
	})
	for _, name := range clusters {
		f.waitDeployment(name, "web", "created by the work", func(d *appsv1.Deployment) bool { return d.Spec.Template.Spec.Containers[0].Image == "nginx:2" })
	}
}
