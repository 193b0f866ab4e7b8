package deployrunner

import (
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/manifests"
)

// deploy/hub applied to a hub: everything but the Deployment is there, the CRDs the hub already
// serves from manifests/ are left alone (and one that differs is refused), and a process with the ServiceAccount kubeconfig is the
// Deployment's ServiceAccount, allowed what deploy/hub's ClusterRole grants and nothing more.
func TestApplyToAndServiceAccountKubeconfigRunAsTheShippedIdentity(t *testing.T) {
	env := localcluster.StartForTest(t, localcluster.Options{})
	hub := env.Hub
	in, err := Render(t.Context(), deployDir+"hub")
	if err != nil {
		t.Fatal(err)
	}
	crds, err := manifests.HubCRDs()
	if err != nil {
		t.Fatal(err)
	}
	if err := in.ApplyTo(t.Context(), hub.Name, hub.Config, crds); err != nil {
		t.Fatal(err)
	}
	admin := kubernetes.NewForConfigOrDie(hub.Config)
	d := in.Deployment
	if _, err := admin.CoreV1().ServiceAccounts(d.Namespace).Get(t.Context(), d.Spec.Template.Spec.ServiceAccountName, metav1.GetOptions{}); err != nil {
		t.Errorf("the ServiceAccount of deploy/hub: %v", err)
	}
	if _, err := admin.AppsV1().Deployments(d.Namespace).Get(t.Context(), d.Name, metav1.GetOptions{}); err == nil {
		t.Errorf("the Deployment %s/%s was applied; the local binary stands in for it", d.Namespace, d.Name)
	}
	ext := apiextensionsclient.NewForConfigOrDie(hub.Config)
	crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), "manifestworks.work.open-cluster-management.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range crd.ManagedFields {
		if f.Manager == FieldManager {
			t.Errorf("CRD %s was applied again though the hub serves it identically from manifests/", crd.Name)
		}
	}

	// A CRD deploy/ ships that differs from the one the hub serves from manifests/ is an error, not
	// silently one or the other: the local run would serve something other than what ships.
	changed := make([]*apiextensionsv1.CustomResourceDefinition, len(crds))
	for i, c := range crds {
		changed[i] = c.DeepCopy()
		if c.Name == crd.Name {
			changed[i].Spec.Names.ShortNames = append(changed[i].Spec.Names.ShortNames, "changed")
		}
	}
	if err := in.ApplyTo(t.Context(), hub.Name, hub.Config, changed); err == nil || !strings.Contains(err.Error(), "CRD "+crd.Name+" differs from the one installed from manifests/") {
		t.Errorf("ApplyTo with a CRD that differs from the hub's: %v, want an error naming it", err)
	}

	path := filepath.Join(t.TempDir(), "hub.kubeconfig")
	user, err := ServiceAccountKubeconfig(t.Context(), hub.Name, hub.Config, d, path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:ferry-system:ferry-hub"; user != want {
		t.Errorf("user %q, want %q", user, want)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	as := kubernetes.NewForConfigOrDie(cfg)
	review, err := as.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if review.Status.UserInfo.Username != user {
		t.Errorf("the kubeconfig authenticates as %q, want %q", review.Status.UserInfo.Username, user)
	}
	for _, tc := range []struct {
		verb, group, resource string
		allowed               bool
	}{
		{"list", "work.open-cluster-management.io", "manifestworks", true}, // deploy/hub/clusterrole.yaml
		{"list", "", "secrets", false},                                     // never granted
	} {
		ssar, err := as.AuthorizationV1().SelfSubjectAccessReviews().Create(t.Context(), &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: tc.verb, Group: tc.group, Resource: tc.resource}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ssar.Status.Allowed != tc.allowed {
			t.Errorf("%s may %s %s: %t, want %t", user, tc.verb, tc.resource, ssar.Status.Allowed, tc.allowed)
		}
	}
}
