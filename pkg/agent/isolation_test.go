package agent_test

import (
	"os"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	workclientset "open-cluster-management.io/api/client/work/clientset/versioned"
	"sigs.k8s.io/yaml"
)

// The agent works with a hub credential limited to its cluster namespace by the shipped ClusterRole,
// and never touches another cluster's ManifestWorks.
func TestAgentWorksWithACredentialScopedToItsNamespace(t *testing.T) {
	e := testEnv(t)
	admin, err := kubernetes.NewForConfig(e.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../../deploy/agent/hub-clusterrole.yaml")
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	f := startAgent(t) // restarted below with the scoped credential
	f.stop()
	user := "system:open-cluster-management:" + f.cluster + ":agent"
	scoped, err := e.Hub.AddUser(user, nil)
	if err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ferry-agent", Namespace: f.cluster},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
	}
	if _, err := admin.RbacV1().RoleBindings(f.cluster).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Another cluster's namespace, with a work in it.
	other := startAgent(t)
	other.stop()
	otherWork := other.create(other.work("not-mine", `{apiVersion: v1, kind: ConfigMap, metadata: {name: not-mine, namespace: default}}`))

	// The credential cannot see the other namespace at all.
	scopedWork, err := workclientset.NewForConfig(scoped)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scopedWork.WorkV1().ManifestWorks(other.cluster).List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("listing another cluster's works: %v, want forbidden", err)
	}

	f.cfg.Hub = counted(scoped, f.hubWrites, nil)
	f.start()
	f.create(f.work("mine", namespaceManifest, configMapA))
	f.waitWork("mine", "applied with the scoped credential", allApplied)

	got, err := other.hub.WorkV1().ManifestWorks(other.cluster).Get(t.Context(), otherWork.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Finalizers) != 0 || len(got.Status.Conditions) != 0 {
		t.Errorf("the other cluster's work was touched: finalizers %v, conditions %v", got.Finalizers, got.Status.Conditions)
	}
	if _, err := f.kube.CoreV1().ConfigMaps("default").Get(t.Context(), "not-mine", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the other cluster's object is on this spoke: %v", err)
	}
}
