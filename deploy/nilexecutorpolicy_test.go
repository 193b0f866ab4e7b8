package deploy

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	workclientset "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1 "open-cluster-management.io/api/work/v1"
)

// workAgentUser is OCM's name for the work agent's own identity, which a work or an AppConfig with no
// executor is applied as: NilExecutorValidating asks for execute-as on it.
const workAgentUser = "system:serviceaccount::klusterlet-work-sa"

var applicationConfigurations = schema.GroupVersionResource{Group: "core.oam.dev", Version: "v1alpha2", Resource: "applicationconfigurations"}

// The hub's policy ferry-appconfig-executor, as deploy/hub installs it, enforced by a real API server:
// an AppConfig that names no executor is applied with the work agent's own rights, so creating one,
// or removing the executor of one, needs execute-as on applicationconfigurations named after the
// work agent (OCM's NilExecutorValidating, on by default for AppConfigs); updates that leave the
// executor as it was need nothing more.
func TestAppConfigPolicyRefusesNoExecutorWithoutExecuteAsTheWorkAgent(t *testing.T) {
	kubectl(t)
	_, objs := render(t, "hub")
	const ns = "team-a"
	env := startPolicyEnv(t, ns, "alice", policiesNamed(t, objs, "ferry-appconfig-executor"))
	env.grant.role(ns, "appconfigs", rbacv1.PolicyRule{APIGroups: []string{"core.oam.dev"}, Resources: []string{"applicationconfigurations"},
		Verbs: []string{"get", "list", "create", "update", "patch", "delete"}})
	// alice may execute as apps/deployer, so that naming it is not what is refused below.
	env.grant.role(ns, "execute-as-deployer", rbacv1.PolicyRule{APIGroups: []string{"core.oam.dev"}, Resources: []string{"applicationconfigurations"},
		Verbs: []string{"execute-as"}, ResourceNames: []string{"system:serviceaccount:apps:deployer"}})
	appConfigs := env.userDyn.Resource(applicationConfigurations).Namespace(ns)
	adminAppConfigs := env.adminDyn.Resource(applicationConfigurations).Namespace(ns)
	appConfig := func(name, executor string) *unstructured.Unstructured {
		spec := map[string]any{"components": []any{map[string]any{"componentName": "web"}}}
		if executor != "" {
			spec["executor"] = map[string]any{"subject": map[string]any{
				"type": "ServiceAccount", "serviceAccount": map[string]any{"namespace": "apps", "name": executor}}}
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "core.oam.dev/v1alpha2", "kind": "ApplicationConfiguration",
			"metadata": map[string]any{"name": name}, "spec": spec,
		}}
	}
	// What an administrator wrote before: an AppConfig with no executor, one with an executor.
	for _, a := range []*unstructured.Unstructured{appConfig("legacy", ""), appConfig("deployed", "deployer")} {
		if _, err := adminAppConfigs.Create(t.Context(), a, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	var refusal error
	pollPolicy(t, "an AppConfig with no executor is refused", func(ctx context.Context) bool {
		_, refusal = appConfigs.Create(ctx, appConfig("plain", ""), metav1.CreateOptions{})
		if refusal == nil { // admitted before the policy took effect: try again without it
			_ = adminAppConfigs.Delete(ctx, "plain", metav1.DeleteOptions{})
		}
		return refusedSaying(refusal, workAgentUser)
	})
	wantRefused(t, "an AppConfig with no executor", refusal, "ferry-appconfig-executor",
		"alice", "create an ApplicationConfiguration with no executor", "namespace team-a",
		"verb execute-as on applicationconfigurations named "+workAgentUser,
		"resourceNames ["+workAgentUser+"]", "a ServiceAccount you may execute-as")
	if _, err := appConfigs.Create(t.Context(), appConfig("named", "deployer"), metav1.CreateOptions{}); err != nil {
		t.Errorf("an AppConfig naming an executor alice may execute as: %v", err)
	}

	// Updates that leave the executor as it was: the administrator's AppConfig with none, alice's with one.
	for _, name := range []string{"legacy", "named"} {
		a, err := appConfigs.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a.SetLabels(map[string]string{"team": "a"})
		a.SetFinalizers([]string{"ferry.io/test"})
		if err := unstructured.SetNestedSlice(a.Object, []any{map[string]any{"componentName": "web"}, map[string]any{"componentName": "db"}}, "spec", "components"); err != nil {
			t.Fatal(err)
		}
		if _, err := appConfigs.Update(t.Context(), a, metav1.UpdateOptions{}); err != nil {
			t.Errorf("an update of %s that leaves its executor as it was: %v", name, err)
		}
		patch := []byte(`{"metadata":{"finalizers":null,"annotations":{"ferry.io/paused":"true"}}}`)
		if _, err := appConfigs.Patch(t.Context(), name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			t.Errorf("a merge patch of %s that leaves its executor as it was: %v", name, err)
		}
	}

	// Removing an executor leaves the work agent's rights.
	removeExecutor := func(ctx context.Context, name string) error {
		a, err := appConfigs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		unstructured.RemoveNestedField(a.Object, "spec", "executor")
		_, err = appConfigs.Update(ctx, a, metav1.UpdateOptions{})
		return err
	}
	wantRefused(t, "removing the executor of deployed", removeExecutor(t.Context(), "deployed"), "ferry-appconfig-executor",
		"remove the executor of ApplicationConfiguration deployed", "applicationconfigurations named "+workAgentUser)

	env.grant.role(ns, "execute-as-work-agent", rbacv1.PolicyRule{APIGroups: []string{"core.oam.dev"}, Resources: []string{"applicationconfigurations"},
		Verbs: []string{"execute-as"}, ResourceNames: []string{workAgentUser}})
	pollPolicy(t, "the AppConfig is admitted once alice may execute as the work agent", func(ctx context.Context) bool {
		_, err := appConfigs.Create(ctx, appConfig("plain", ""), metav1.CreateOptions{})
		return err == nil
	})
	if err := removeExecutor(t.Context(), "deployed"); err != nil {
		t.Errorf("removing the executor of deployed with execute-as on the work agent: %v", err)
	}
}

// components/nil-executor-validating turns OCM's NilExecutorValidating on for ManifestWorks: rendered
// into an overlay of deploy/hub as its comment says, its policy refuses a work with no executor, or an
// update that removes one, unless the author may execute-as the work agent on manifestworks in the
// work's namespace; ferry-hub, which may execute-as anyone, writes works with no executor. deploy/hub
// by itself leaves it off.
func TestNilExecutorComponentRefusesAWorkWithoutExecutor(t *testing.T) {
	kubectl(t)
	const policy = "ferry-manifestwork-nil-executor"
	_, hubObjs := render(t, "hub")
	if slices.Contains(policyNames(hubObjs), policy) {
		t.Fatalf("deploy/hub renders %s: it is off by default, as OCM's NilExecutorValidating", policy)
	}
	overlay := t.TempDir()
	hubDir, err := filepath.Abs("hub")
	if err != nil {
		t.Fatal(err)
	}
	// kustomize takes only relative paths to other kustomizations.
	hubPath, err := filepath.Rel(overlay, hubDir)
	if err != nil {
		t.Fatal(err)
	}
	kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- " + hubPath +
		"\ncomponents:\n- " + filepath.Join(hubPath, "components", "nil-executor-validating") + "\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	_, objs := render(t, overlay)
	if len(objs) != len(hubObjs)+2 {
		t.Errorf("the overlay renders %d objects, want deploy/hub's %d and the component's policy and binding", len(objs), len(hubObjs))
	}

	var ferryHubRBAC []*unstructured.Unstructured
	for _, o := range objs {
		if (o.GetKind() == "ClusterRole" || o.GetKind() == "ClusterRoleBinding") && o.GetName() == "ferry-hub" {
			ferryHubRBAC = append(ferryHubRBAC, o)
		}
	}
	if len(ferryHubRBAC) != 2 {
		t.Fatalf("the overlay renders %d ClusterRoles and ClusterRoleBindings named ferry-hub, want 2", len(ferryHubRBAC))
	}
	const ns = "cluster1"
	env := startPolicyEnv(t, ns, "alice", append(policiesNamed(t, objs, policy), ferryHubRBAC...))
	env.grant.role(ns, "manifestworks", rbacv1.PolicyRule{APIGroups: []string{"work.open-cluster-management.io"}, Resources: []string{"manifestworks"},
		Verbs: []string{"get", "list", "create", "update", "patch", "delete"}})
	works := policyWorkClient(t, env.userConfig).WorkV1().ManifestWorks(ns)
	adminWorks := policyWorkClient(t, env.Hub.Config).WorkV1().ManifestWorks(ns)
	work := func(name, executor string) *workv1.ManifestWork {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		w.Spec.Workload.Manifests = []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"}}`)}}}
		if executor != "" {
			w.Spec.Executor = &workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{
				Type: workv1.ExecutorSubjectTypeServiceAccount, ServiceAccount: &workv1.ManifestWorkSubjectServiceAccount{Namespace: "apps", Name: executor}}}
		}
		return w
	}
	for _, w := range []*workv1.ManifestWork{work("legacy", ""), work("deployed", "deployer")} {
		if _, err := adminWorks.Create(t.Context(), w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	var refusal error
	pollPolicy(t, "a work with no executor is refused", func(ctx context.Context) bool {
		_, refusal = works.Create(ctx, work("plain", ""), metav1.CreateOptions{})
		if refusal == nil { // admitted before the policy took effect: try again without it
			_ = adminWorks.Delete(ctx, "plain", metav1.DeleteOptions{})
		}
		return refusedSaying(refusal, workAgentUser)
	})
	wantRefused(t, "a work with no executor", refusal, policy,
		"alice", "create a ManifestWork with no executor", "namespace cluster1",
		"verb execute-as on manifestworks named "+workAgentUser, "resourceNames ["+workAgentUser+"]", "a ServiceAccount you may execute-as")
	// A work naming an executor is ferry-manifestwork-executor's to check, not this policy's.
	if _, err := works.Create(t.Context(), work("named", "deployer"), metav1.CreateOptions{}); err != nil {
		t.Errorf("a work naming an executor: %v", err)
	}
	// An update that leaves the executor as it was (none) is not checked.
	legacy, err := works.Get(t.Context(), "legacy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	legacy.Labels = map[string]string{"team": "a"}
	legacy.Spec.Workload.Manifests = append(legacy.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","namespace":"default"}}`)}})
	if _, err := works.Update(t.Context(), legacy, metav1.UpdateOptions{}); err != nil {
		t.Errorf("an update of a work with no executor that leaves it so: %v", err)
	}
	removeExecutor := func(ctx context.Context) error {
		w, err := works.Get(ctx, "deployed", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w.Spec.Executor = nil
		_, err = works.Update(ctx, w, metav1.UpdateOptions{})
		return err
	}
	wantRefused(t, "removing the executor of a work", removeExecutor(t.Context()), policy,
		"remove the executor of ManifestWork deployed", "manifestworks named "+workAgentUser)

	// ferry-hub, bound to its ClusterRole as deploy/hub binds it, writes works with no executor.
	hubConfig := rest.CopyConfig(env.Hub.Config)
	hubConfig.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:ferry-system:ferry-hub"}
	pollPolicy(t, "ferry-hub's work with no executor is admitted", func(ctx context.Context) bool {
		_, err := policyWorkClient(t, hubConfig).WorkV1().ManifestWorks(ns).Create(ctx, work("by-ferry-hub", ""), metav1.CreateOptions{})
		return err == nil
	})

	env.grant.role(ns, "execute-as-work-agent", rbacv1.PolicyRule{APIGroups: []string{"work.open-cluster-management.io"}, Resources: []string{"manifestworks"},
		Verbs: []string{"execute-as"}, ResourceNames: []string{workAgentUser}})
	pollPolicy(t, "the work is admitted once alice may execute as the work agent", func(ctx context.Context) bool {
		_, err := works.Create(ctx, work("plain", ""), metav1.CreateOptions{})
		return err == nil
	})
	if err := removeExecutor(t.Context()); err != nil {
		t.Errorf("removing the executor of a work with execute-as on the work agent: %v", err)
	}
}

// policyWorkClient returns a ManifestWork client for cfg.
func policyWorkClient(t *testing.T, cfg *rest.Config) *workclientset.Clientset {
	t.Helper()
	c, err := workclientset.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
