package agent_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/agent"
)

// A work's spec.executor names a ServiceAccount on the managed cluster; the work may do no more than
// it may, whether the agent checks (as OCM's, the default) or applies as the ServiceAccount.

func withExecutorMode(mode agent.ExecutorMode) agentOption {
	return func(c *agentSetup) { c.ExecutorMode = mode }
}

// withSubjectAccessReviews counts the SubjectAccessReviews the agent asks the spoke.
func withSubjectAccessReviews(n *atomic.Int64) agentOption {
	return func(c *agentSetup) {
		c.Spoke = rest.CopyConfig(c.Spoke)
		c.Spoke.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/subjectaccessreviews") {
					n.Add(1)
				}
				return rt.RoundTrip(req)
			})
		})
	}
}

// executorSetup makes the test's namespace and ServiceAccount deployer in it on the spoke, and returns
// the executor that names it.
func executorSetup(t *testing.T, f *agentFixture) *workv1.ManifestWorkExecutor {
	t.Helper()
	if _, err := f.kube.CoreV1().Namespaces().Create(t.Context(), namespace(f.cluster), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: f.cluster}}
	if _, err := f.kube.CoreV1().ServiceAccounts(f.cluster).Create(t.Context(), sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{
		Type:           workv1.ExecutorSubjectTypeServiceAccount,
		ServiceAccount: &workv1.ManifestWorkSubjectServiceAccount{Namespace: f.cluster, Name: "deployer"},
	}}
}

// grantConfigMaps lets the deployer do everything to the named ConfigMaps of the test's namespace.
func grantConfigMaps(t *testing.T, f *agentFixture, role string, names ...string) {
	t.Helper()
	r := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: f.cluster}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: names, Verbs: []string{"get", "create", "update", "patch", "delete"}},
	}}
	if len(names) == 0 {
		// create cannot be limited by name: the object has none yet when it is authorized.
		r.Rules[0].ResourceNames = nil
	}
	if _, err := f.kube.RbacV1().Roles(f.cluster).Create(t.Context(), r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: f.cluster},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "deployer", Namespace: f.cluster}}}
	if _, err := f.kube.RbacV1().RoleBindings(f.cluster).Create(t.Context(), rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// The executor may do what one Role grants (ConfigMaps named a) and nothing else: a is applied, b is
// not, with a message naming the ServiceAccount, the verb and the object; granted b, the work applies
// it within moments, without waiting for a resync.
func TestExecutorMayApplyOnlyWhatItsServiceAccountMay(t *testing.T) {
	for _, mode := range []agent.ExecutorMode{agent.ExecutorCheck, agent.ExecutorImpersonate} {
		t.Run(string(mode), func(t *testing.T) {
			f := startAgent(t, withExecutorMode(mode))
			executor := executorSetup(t, f)
			// (create cannot be granted by name: the API server authorizes a create before the object
			// has one. So a exists already, and only b has to be created.)
			if _, err := f.kube.CoreV1().ConfigMaps(f.cluster).Create(t.Context(), configMap(f.cluster, "a", "before"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			grantConfigMaps(t, f, "only-a", "a")
			w := f.work("executor-"+string(mode), configMapA, configMapB)
			w.Spec.Executor = executor
			f.create(w)
			got := f.waitWork(w.Name, "a applied, b refused", func(w *workv1.ManifestWork) bool {
				return hasCondition(w, 0, workv1.ManifestApplied, metav1.ConditionTrue) && hasCondition(w, 1, workv1.ManifestApplied, metav1.ConditionFalse)
			})
			c := manifestCondition(got, 1, workv1.ManifestApplied)
			sa := "ServiceAccount " + f.cluster + "/deployer"
			if c.Reason != workv1.AppliedManifestFailed || !strings.Contains(c.Message, sa) || !strings.Contains(c.Message, "configmaps") || !strings.Contains(c.Message, "b") {
				t.Errorf("b's Applied: %s %q; want %s naming %s, configmaps and b", c.Reason, c.Message, workv1.AppliedManifestFailed, sa)
			}
			if mode == agent.ExecutorCheck && !strings.Contains(c.Message, "create") {
				t.Errorf("b's Applied message %q does not name the verb", c.Message)
			}
			if f.configMapExists("b") {
				t.Fatal("configmap b was created although the executor may not create it")
			}
			grantConfigMaps(t, f, "also-b")
			f.waitWork(w.Name, "b applied once granted", allApplied)
			if !f.configMapExists("b") {
				t.Fatal("configmap b not created after the grant")
			}
		})
	}
}

// A ClusterRole grants permissions: an executor that may create ClusterRoles but does not hold what
// one grants may not create it (RBAC's escalation check, asked with a dry-run as the ServiceAccount in
// check mode, enforced by the API server when impersonating).
func TestExecutorMayNotEscalate(t *testing.T) {
	for _, mode := range []agent.ExecutorMode{agent.ExecutorCheck, agent.ExecutorImpersonate} {
		t.Run(string(mode), func(t *testing.T) {
			f := startAgent(t, withExecutorMode(mode))
			executor := executorSetup(t, f)
			name := "executor-escalation-" + f.cluster
			cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}},
			}}
			if _, err := f.kube.RbacV1().ClusterRoles().Create(t.Context(), cr, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
				RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "deployer", Namespace: f.cluster}}}
			if _, err := f.kube.RbacV1().ClusterRoleBindings().Create(t.Context(), crb, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = f.kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
				_ = f.kube.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
			})
			secrets := `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: "{{ns}}-secrets"}, rules: [{apiGroups: [""], resources: [secrets], verbs: ["*"]}]}`
			w := f.work("executor-escalation-"+string(mode), secrets)
			w.Spec.Executor = executor
			f.create(w)
			got := f.waitWork(w.Name, "refused", func(w *workv1.ManifestWork) bool {
				return hasCondition(w, 0, workv1.ManifestApplied, metav1.ConditionFalse)
			})
			if c := manifestCondition(got, 0, workv1.ManifestApplied); !strings.Contains(c.Message, "ServiceAccount "+f.cluster+"/deployer") {
				t.Errorf("Applied message %q does not name the ServiceAccount", c.Message)
			}
			if _, err := f.kube.RbacV1().ClusterRoles().Get(t.Context(), f.cluster+"-secrets", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("the escalating ClusterRole exists (%v): the executor granted what it does not hold", err)
			}
		})
	}
}

// --default-executor holds works that name no executor to a ServiceAccount (a lockdown).
func TestDefaultExecutorHoldsWorksWithoutOne(t *testing.T) {
	f := startAgent(t, func(c *agentSetup) {
		c.DefaultExecutor = &workv1.ManifestWorkSubjectServiceAccount{Namespace: c.ClusterName, Name: "deployer"}
	})
	executorSetup(t, f)
	w := f.create(f.work("default-executor", configMapA))
	got := f.waitWork(w.Name, "refused", func(w *workv1.ManifestWork) bool {
		return hasCondition(w, 0, workv1.ManifestApplied, metav1.ConditionFalse)
	})
	if c := manifestCondition(got, 0, workv1.ManifestApplied); !strings.Contains(c.Message, "ServiceAccount "+f.cluster+"/deployer") {
		t.Errorf("Applied message %q does not name the default executor", c.Message)
	}
	if f.configMapExists("a") {
		t.Fatal("configmap a was created with the agent's rights")
	}
}

// What is allowed is asked once: a work of five ConfigMaps costs one SubjectAccessReview per verb and
// object when it is first applied, and none when it is reconciled again.
func TestExecutorDecisionsAreCached(t *testing.T) {
	var reviews atomic.Int64
	f := startAgent(t, withSubjectAccessReviews(&reviews))
	executor := executorSetup(t, f)
	grantConfigMaps(t, f, "all")
	var manifests []string
	for _, name := range []string{"c1", "c2", "c3", "c4", "c5"} {
		manifests = append(manifests, f.replace(configMapA, "name: a", "name: "+name))
	}
	w := f.work("executor-cache", manifests...)
	w.Spec.Executor = executor
	f.create(w)
	f.waitWork(w.Name, "applied", allApplied)
	first := reviews.Load()
	// get, create, update, patch and delete of each of the five.
	if first != 25 {
		t.Errorf("first apply asked %d SubjectAccessReviews, want 25 (5 verbs × 5 objects)", first)
	}
	// Each label change is a reconcile of the whole work.
	for i := range 3 {
		f.update(w.Name, func(w *workv1.ManifestWork) { w.Labels = map[string]string{"round": string(rune('a' + i))} })
		f.eventually("the AppliedManifestWork has the label", func(ctx context.Context) (bool, error) {
			amw, err := f.spokeWk.WorkV1().AppliedManifestWorks().Get(ctx, agent.HubHash(testEnv(t).Hub.Config.Host)+"-"+w.Name, metav1.GetOptions{})
			return err == nil && amw.Labels["round"] == string(rune('a'+i)), nil
		})
	}
	if again := reviews.Load() - first; again != 0 {
		t.Errorf("three more reconciles asked %d SubjectAccessReviews, want 0", again)
	}
	t.Logf("SubjectAccessReviews: %d for the first apply of 5 manifests, %d for 3 reconciles after", first, reviews.Load()-first)
}
