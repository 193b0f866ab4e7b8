package deploy

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	workclientset "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1 "open-cluster-management.io/api/work/v1"
)

// The hub's ValidatingAdmissionPolicy, as deploy/hub installs it, enforced by a real API server: a
// user may name an executor on a ManifestWork only if they may execute-as it (verb execute-as on
// manifestworks named after the ServiceAccount, in the work's namespace), as OCM's work webhook
// checks; an update that leaves the executor alone needs nothing more.
func TestExecutorPolicyRefusesAnExecutorTheUserMayNotExecuteAs(t *testing.T) {
	kubectl(t)
	_, objs := render(t, "hub")
	const ns = "cluster1"
	// The executor policies (ManifestWorks, AppConfigs) and their bindings.
	env := startPolicyEnv(t, ns, "team-a", policiesNamed(t, objs, "ferry-manifestwork-executor", "ferry-appconfig-executor"))
	env.grant.role(ns, "manifestworks", rbacv1.PolicyRule{APIGroups: []string{"work.open-cluster-management.io"}, Resources: []string{"manifestworks"},
		Verbs: []string{"get", "list", "create", "update", "patch", "delete"}})
	user, err := workclientset.NewForConfig(env.userConfig)
	if err != nil {
		t.Fatal(err)
	}
	works := user.WorkV1().ManifestWorks(ns)
	work := func(name, executor string) *workv1.ManifestWork {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		w.Spec.Workload.Manifests = []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"}}`)}}}
		if executor != "" {
			w.Spec.Executor = &workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{
				Type: workv1.ExecutorSubjectTypeServiceAccount, ServiceAccount: &workv1.ManifestWorkSubjectServiceAccount{Namespace: "apps", Name: executor}}}
		}
		return w
	}
	// poll until done: the API server enforces a new policy, and a new grant, a moment after they are
	// written.
	poll := func(what string, done func(ctx context.Context) bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) { return done(ctx), nil }); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	var refusal error
	poll("a work naming an executor team-a may not execute as is refused", func(ctx context.Context) bool {
		_, refusal = works.Create(ctx, work("deployer-work", "deployer"), metav1.CreateOptions{})
		if refusal == nil { // admitted before the policy took effect: try again without it
			_ = works.Delete(ctx, "deployer-work", metav1.DeleteOptions{})
		}
		return refusal != nil && strings.Contains(refusal.Error(), "execute-as")
	})
	for _, says := range []string{"team-a", "ServiceAccount apps/deployer", "system:serviceaccount:apps:deployer", "namespace cluster1"} {
		if !strings.Contains(refusal.Error(), says) {
			t.Errorf("the refusal %q does not say %q", refusal, says)
		}
	}
	if _, err := works.Create(t.Context(), work("plain", ""), metav1.CreateOptions{}); err != nil {
		t.Errorf("a work without an executor: %v", err)
	}

	env.grant.role(ns, "execute-as-deployer", rbacv1.PolicyRule{APIGroups: []string{"work.open-cluster-management.io"}, Resources: []string{"manifestworks"},
		Verbs: []string{"execute-as"}, ResourceNames: []string{"system:serviceaccount:apps:deployer"}})
	poll("the work is admitted once team-a may execute as the ServiceAccount", func(ctx context.Context) bool {
		_, err := works.Create(ctx, work("deployer-work", "deployer"), metav1.CreateOptions{})
		return err == nil
	})

	// An administrator names another executor on a work; team-a may change the rest of it, not that.
	adminWorks, err := workclientset.NewForConfig(env.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adminWorks.WorkV1().ManifestWorks(ns).Create(t.Context(), work("admin-work", "admin"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := works.Get(t.Context(), "admin-work", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Labels = map[string]string{"team": "a"}
	if w, err = works.Update(t.Context(), w, metav1.UpdateOptions{}); err != nil {
		t.Errorf("an update that leaves the executor alone: %v", err)
	}
	w.Spec.Executor.Subject.ServiceAccount.Name = "root"
	if _, err := works.Update(t.Context(), w, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), "apps/root") {
		t.Errorf("an update to an executor team-a may not execute as: %v, want it refused", err)
	}

	// The same for an AppConfig, whose executor ferry-hub copies into its works: execute-as on
	// applicationconfigurations.
	env.grant.role(ns, "appconfigs", rbacv1.PolicyRule{APIGroups: []string{"core.oam.dev"}, Resources: []string{"applicationconfigurations"},
		Verbs: []string{"get", "create", "update"}})
	appConfigs := env.userDyn.Resource(schema.GroupVersionResource{Group: "core.oam.dev", Version: "v1alpha2", Resource: "applicationconfigurations"}).Namespace(ns)
	appConfig := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "core.oam.dev/v1alpha2", "kind": "ApplicationConfiguration",
		"metadata": map[string]any{"name": "shop"},
		"spec": map[string]any{"executor": map[string]any{"subject": map[string]any{
			"type": "ServiceAccount", "serviceAccount": map[string]any{"namespace": "apps", "name": "shop-deployer"}}}},
	}}
	poll("an AppConfig naming an executor team-a may not execute as is refused", func(ctx context.Context) bool {
		_, refusal = appConfigs.Create(ctx, appConfig, metav1.CreateOptions{})
		if refusal == nil {
			_ = appConfigs.Delete(ctx, "shop", metav1.DeleteOptions{})
		}
		return refusal != nil && strings.Contains(refusal.Error(), "execute-as")
	})
	if !strings.Contains(refusal.Error(), "apps/shop-deployer") || !strings.Contains(refusal.Error(), "applicationconfigurations") {
		t.Errorf("the AppConfig's refusal %q names neither the ServiceAccount nor the resource", refusal)
	}
	env.grant.role(ns, "execute-as-shop-deployer", rbacv1.PolicyRule{APIGroups: []string{"core.oam.dev"}, Resources: []string{"applicationconfigurations"},
		Verbs: []string{"execute-as"}, ResourceNames: []string{"system:serviceaccount:apps:shop-deployer"}})
	poll("the AppConfig is admitted once team-a may execute as the ServiceAccount", func(ctx context.Context) bool {
		_, err := appConfigs.Create(ctx, appConfig, metav1.CreateOptions{})
		return err == nil
	})
}
