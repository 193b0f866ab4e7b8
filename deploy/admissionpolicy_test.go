package deploy

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

// What the admission policy tests share: a real API server with some policies applied and a user to
// refuse, the ValidatingAdmissionPolicies of a rendering picked by name, a user's grants, and polling
// until a new policy or grant takes effect.

// policyEnv is what an admission policy test runs against: a real API server with the objects the
// test applied, and a user with no rights until the test grants them.
type policyEnv struct {
	*localcluster.Environment
	// adminDyn is a dynamic client of the hub's administrator (system:masters).
	adminDyn dynamic.Interface
	// userConfig and userDyn are the user's client configuration and dynamic client.
	userConfig *rest.Config
	userDyn    dynamic.Interface
	// grant grants the user Roles and ClusterRoles with the administrator's client.
	grant granter
}

// startPolicyEnv starts a real API server, applies objs to it (the policies under test and their
// bindings), creates namespace (none if it is ""), and adds user with no rights, for the test to grant.
func startPolicyEnv(t *testing.T, namespace, user string, objs []*unstructured.Unstructured) *policyEnv {
	t.Helper()
	env := localcluster.StartForTest(t, localcluster.Options{})
	apply(t, env.Hub.Kubeconfig, objs, "")
	admin, err := kubernetes.NewForConfig(env.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	if namespace != "" {
		newPolicyNamespace(t, admin, namespace)
	}
	userConfig, err := env.Hub.AddUser(user, nil)
	if err != nil {
		t.Fatal(err)
	}
	userDyn, err := dynamic.NewForConfig(userConfig)
	if err != nil {
		t.Fatal(err)
	}
	adminDyn, err := dynamic.NewForConfig(env.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	return &policyEnv{Environment: env, adminDyn: adminDyn, userConfig: userConfig, userDyn: userDyn,
		grant: granter{t: t, admin: admin, user: user}}
}

// policiesNamed returns the ValidatingAdmissionPolicies of objs with those names and their bindings
// (named as their policies), failing the test unless each has exactly one of each.
func policiesNamed(t *testing.T, objs []*unstructured.Unstructured, names ...string) []*unstructured.Unstructured {
	t.Helper()
	var picked []*unstructured.Unstructured
	for _, name := range names {
		for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
			var found []*unstructured.Unstructured
			for _, o := range objs {
				if o.GetKind() == kind && o.GetName() == name {
					found = append(found, o)
				}
			}
			if len(found) != 1 {
				t.Fatalf("the rendering has %d %s objects named %s, want 1", len(found), kind, name)
			}
			picked = append(picked, found...)
		}
	}
	return picked
}

// policyNames returns the names of the ValidatingAdmissionPolicies in objs.
func policyNames(objs []*unstructured.Unstructured) []string {
	var names []string
	for _, o := range objs {
		if o.GetKind() == "ValidatingAdmissionPolicy" {
			names = append(names, o.GetName())
		}
	}
	slices.Sort(names)
	return names
}

// pollPolicy calls done until it reports true, failing the test after 30s: the API server enforces a
// new policy, and a new grant, a moment after they are written.
func pollPolicy(t *testing.T, what string, done func(ctx context.Context) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) { return done(ctx), nil }); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// refusedSaying reports whether err is a refusal that says each of says.
func refusedSaying(err error, says ...string) bool {
	if err == nil {
		return false
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			return false
		}
	}
	return true
}

// wantRefused fails the test unless err is a refusal by policy saying each of says.
func wantRefused(t *testing.T, what string, err error, policy string, says ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: admitted, want it refused by %s", what, policy)
		return
	}
	for _, s := range append([]string{"ValidatingAdmissionPolicy '" + policy + "'"}, says...) {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: the refusal %q does not say %q", what, err, s)
		}
	}
}

// granter makes Roles and ClusterRoles for a user with the admin client.
type granter struct {
	t     *testing.T
	admin kubernetes.Interface
	user  string
}

func (g granter) subjects() []rbacv1.Subject {
	return []rbacv1.Subject{{Kind: "User", Name: g.user, APIGroup: "rbac.authorization.k8s.io"}}
}

// role grants rules in namespace ns with a Role and a RoleBinding called name.
func (g granter) role(ns, name string, rules ...rbacv1.PolicyRule) {
	g.t.Helper()
	if _, err := g.admin.RbacV1().Roles(ns).Create(g.t.Context(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		g.t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}, Subjects: g.subjects()}
	if _, err := g.admin.RbacV1().RoleBindings(ns).Create(g.t.Context(), rb, metav1.CreateOptions{}); err != nil {
		g.t.Fatal(err)
	}
}

// clusterRole grants rules everywhere with a ClusterRole and a ClusterRoleBinding called name.
func (g granter) clusterRole(name string, rules ...rbacv1.PolicyRule) {
	g.t.Helper()
	if _, err := g.admin.RbacV1().ClusterRoles().Create(g.t.Context(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		g.t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name}, Subjects: g.subjects()}
	if _, err := g.admin.RbacV1().ClusterRoleBindings().Create(g.t.Context(), crb, metav1.CreateOptions{}); err != nil {
		g.t.Fatal(err)
	}
}

// newPolicyNamespace creates a namespace with the admin client.
func newPolicyNamespace(t *testing.T, admin kubernetes.Interface, name string) {
	t.Helper()
	if _, err := admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
