package deploy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

// tenantAccess is one request a user may or may not make: verb on resource (resource[/subresource].group)
// in namespace ("" for every namespace), optionally of the object name.
type tenantAccess struct {
	verb, resource, namespace, name string
}

func (a tenantAccess) String() string {
	s := a.verb + " " + a.resource
	if a.name != "" {
		s += " " + a.name
	}
	if a.namespace == "" {
		return s + " in every namespace"
	}
	return s + " in namespace " + a.namespace
}

// mayDo asks the API server's authorizer, with a SubjectAccessReview, whether user (authenticated,
// in no other group) may make request a.
func mayDo(ctx context.Context, t *testing.T, admin kubernetes.Interface, user string, a tenantAccess) bool {
	t.Helper()
	resource, group, _ := strings.Cut(a.resource, ".")
	resource, subresource, _ := strings.Cut(resource, "/")
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: []string{"system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: a.verb, Group: group, Resource: resource,
			Subresource: subresource, Namespace: a.namespace, Name: a.name},
	}}
	got, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("ask whether %s may %s: %v", user, a, err)
	}
	return got.Status.Allowed
}

// deploy/hub's tenant roles, aggregated by a real kube-controller-manager into the built-in admin,
// edit and view: a user bound to edit in her namespace may write her AppConfigs and Components there
// and read their revisions, and nothing of it anywhere else; neither she nor an admin of the namespace
// may execute-as (name an executor, or leave it out), read ManifestWorks or bind cluster sets; view reads
// only.
func TestTenantRolesAggregateIntoTheBuiltInRoles(t *testing.T) {
	kubectl(t)
	env := localcluster.StartForTest(t, localcluster.Options{Hub: localcluster.ClusterSpec{ControllerManager: true}})
	ctx := t.Context()
	admin, err := kubernetes.NewForConfig(env.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"team-a", "team-b", "cluster1"} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// alice edits team-a, bob views it, carol administers it: the built-in roles, bound as a cluster
	// administrator binds them for a team.
	for user, role := range map[string]string{"alice": "edit", "bob": "view", "carol": "admin"} {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role, Namespace: "team-a"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
		if _, err := admin.RbacV1().RoleBindings("team-a").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Before the tenant roles: the built-in view reads ControllerRevisions (the revisions `kubectl
	// ferry rollout history` lists) already, so the tenant roles need not grant them; and the built-in
	// roles know nothing of Ferry's kinds.
	revisions := tenantAccess{"list", "controllerrevisions.apps", "team-a", ""}
	eventually(t, "the built-in roles are in force", func(ctx context.Context) bool { return mayDo(ctx, t, admin, "bob", revisions) })
	for _, user := range []string{"alice", "bob", "carol"} {
		if !mayDo(ctx, t, admin, user, tenantAccess{"watch", "controllerrevisions.apps", "team-a", ""}) ||
			!mayDo(ctx, t, admin, user, tenantAccess{"get", "controllerrevisions.apps", "team-a", "web-v1"}) {
			t.Errorf("the built-in role of %s does not read ControllerRevisions: tenant-roles.yaml must grant them", user)
		}
		if a := (tenantAccess{"get", "applicationconfigurations.core.oam.dev", "team-a", ""}); mayDo(ctx, t, admin, user, a) {
			t.Fatalf("%s may %s before the tenant roles are applied: the test proves nothing", user, a)
		}
	}

	_, objs := render(t, "hub")
	var roles []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" && strings.HasPrefix(o.GetName(), "ferry-tenant-") {
			roles = append(roles, o)
		}
	}
	if len(roles) != 2 {
		t.Fatalf("deploy/hub renders %d ferry-tenant-* ClusterRoles, want ferry-tenant-view and ferry-tenant-edit", len(roles))
	}
	for _, r := range roles {
		for _, role := range []string{"view", "edit", "admin"} {
			if r.GetLabels()["rbac.authorization.k8s.io/aggregate-to-"+role] == "true" {
				continue
			}
			if role != "view" || r.GetName() != "ferry-tenant-edit" {
				t.Errorf("ClusterRole %s is not aggregated into the built-in %s", r.GetName(), role)
			}
		}
	}
	apply(t, env.Hub.Kubeconfig, roles, "")

	const appConfigs, components = "applicationconfigurations.core.oam.dev", "components.core.oam.dev"
	var reads, writes []tenantAccess
	for _, resource := range []string{appConfigs, components} {
		for _, verb := range []string{"get", "list", "watch"} {
			reads = append(reads, tenantAccess{verb, resource, "team-a", ""})
		}
		reads = append(reads, tenantAccess{"get", strings.Replace(resource, ".", "/status.", 1), "team-a", "web"})
		for _, verb := range []string{"create", "update", "patch", "delete", "deletecollection"} {
			writes = append(writes, tenantAccess{verb, resource, "team-a", ""})
		}
	}
	reads = append(reads, revisions)
	// kube-controller-manager aggregates each built-in role on its own, and may write edit with one
	// tenant role before it has seen the other: wait until every grant is in force, then check them all.
	grants := map[string][]tenantAccess{"alice": append(append([]tenantAccess{}, reads...), writes...), "bob": reads}
	grants["carol"] = grants["alice"]
	eventually(t, "kube-controller-manager aggregated the tenant roles into admin, edit and view", func(ctx context.Context) bool {
		for user, requests := range grants {
			for _, a := range requests {
				if !mayDo(ctx, t, admin, user, a) {
					return false
				}
			}
		}
		return true
	})
	never := []tenantAccess{
		// The hub's report.
		{"update", "applicationconfigurations/status.core.oam.dev", "team-a", "web"},
		{"patch", "applicationconfigurations/status.core.oam.dev", "team-a", "web"},
		// Naming an executor, or leaving it out (OCM's name for the work agent), is a hub
		// administrator's grant.
		{"execute-as", appConfigs, "team-a", "system:serviceaccount:apps:deployer"},
		{"execute-as", appConfigs, "team-a", "system:serviceaccount::klusterlet-work-sa"},
		{"execute-as", "manifestworks.work.open-cluster-management.io", "team-a", "system:serviceaccount:apps:deployer"},
		// The works of every team, in the cluster namespaces.
		{"list", "manifestworks.work.open-cluster-management.io", "", ""},
		{"list", "manifestworks.work.open-cluster-management.io", "cluster1", ""},
		{"list", "manifestworks.work.open-cluster-management.io", "team-a", ""},
		{"get", "manifestworks.work.open-cluster-management.io", "cluster1", "team-a.web"},
		{"watch", "manifestworks.work.open-cluster-management.io", "", ""},
		// Which clusters the namespace reaches.
		{"create", "managedclustersetbindings.cluster.open-cluster-management.io", "team-a", ""},
		{"create", "managedclustersets/bind.cluster.open-cluster-management.io", "", "global"},
		// Another team's namespace.
		{"get", appConfigs, "team-b", ""},
		{"create", appConfigs, "team-b", ""},
		{"patch", components, "team-b", ""},
		{"list", "controllerrevisions.apps", "team-b", ""},
		{"list", appConfigs, "", ""},
	}
	check := func(user string, want bool, requests []tenantAccess) {
		t.Helper()
		for _, a := range requests {
			if got := mayDo(ctx, t, admin, user, a); got != want {
				t.Errorf("%s may %s: %t, want %t", user, a, got, want)
			}
		}
	}
	for _, user := range []string{"alice", "carol"} {
		check(user, true, reads)
		check(user, true, writes)
		check(user, false, never)
	}
	check("bob", true, reads)
	check("bob", false, writes)
	check("bob", false, never)
	// Someone bound to nothing: the tenant roles grant by aggregation only.
	check("dave", false, append(append([]tenantAccess{}, reads...), writes...))

	// And a request made as alice, not only her authorizer's word: she creates an AppConfig and
	// patches it in team-a, not in team-b.
	for ns, want := range map[string]bool{"team-a": true, "team-b": false} {
		name := "shop-" + ns
		manifest := fmt.Sprintf("apiVersion: core.oam.dev/v1alpha2\nkind: ApplicationConfiguration\nmetadata: {name: %s, namespace: %s}\nspec: {}\n", name, ns)
		_, _, err := runKubectl(t, []byte(manifest), "--kubeconfig", env.Hub.Kubeconfig, "--as", "alice", "create", "-f", "-")
		if (err == nil) != want {
			t.Errorf("alice creates an AppConfig in %s: %v, want allowed %t", ns, err, want)
		}
		if !want {
			if err != nil && !strings.Contains(err.Error(), "forbidden") {
				t.Errorf("alice's AppConfig in %s is refused for another reason than RBAC: %v", ns, err)
			}
			continue
		}
		if _, _, err := runKubectl(t, nil, "--kubeconfig", env.Hub.Kubeconfig, "--as", "alice", "-n", ns, "patch", "applicationconfigurations.core.oam.dev",
			name, "--type=merge", "-p", `{"metadata":{"labels":{"team":"a"}}}`); err != nil {
			t.Errorf("alice patches her AppConfig: %v", err)
		}
	}
	if _, _, err := runKubectl(t, nil, "--kubeconfig", env.Hub.Kubeconfig, "--as", "alice", "get", "manifestworks.work.open-cluster-management.io", "-A"); err == nil ||
		!strings.Contains(err.Error(), "forbidden") {
		t.Errorf("alice lists ManifestWorks in every namespace: %v, want forbidden", err)
	}
}

// eventually checks cond every 100ms until it holds, failing t after 30s: the API server's authorizer
// sees a new binding, and an aggregated rule, a moment after it is written.
func eventually(t *testing.T, what string, cond func(ctx context.Context) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) { return cond(ctx), nil }); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
