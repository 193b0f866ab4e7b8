package deploy

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// hubKubeconfigDir is where the agent reads the Secret hub-kubeconfig-secret, as OCM's work agent does.
const hubKubeconfigDir = "/spoke/hub-kubeconfig"

// Each install holds together: the probes and the metrics Service reach the ports the binary is told
// to serve on, the pod's ServiceAccount is rendered and is the subject of every binding, and its
// leader-election Role grants the Lease in the pod's own namespace.
func TestDeploymentsAreWired(t *testing.T) {
	for _, in := range installs {
		t.Run(in.dir, func(t *testing.T) {
			_, objs := render(t, in.dir)
			for _, d := range ofKind[appsv1.Deployment](t, objs, "Deployment") {
				c := d.Spec.Template.Spec.Containers[0]
				checkProbes(t, d, c)
				checkMetricsService(t, d, c, ofKind[corev1.Service](t, objs, "Service"))
				checkServiceAccount(t, d, objs)
				checkLeaderElectionRole(t, d, objs)
			}
		})
	}
}

// ferry-hub elects a leader, and reaches its hub in-cluster.
func TestHubDeploymentArgs(t *testing.T) {
	_, objs := render(t, "hub")
	d := ofKind[appsv1.Deployment](t, objs, "Deployment")[0]
	args := d.Spec.Template.Spec.Containers[0].Args
	if v, ok := flagValue(args, "leader-elect"); !ok || (v != "" && v != "true") {
		t.Errorf("ferry-hub args %q: want --leader-elect", args)
	}
	if _, ok := flagValue(args, "kubeconfig"); ok {
		t.Errorf("ferry-hub args %q: --kubeconfig given; in a cluster it must use its ServiceAccount", args)
	}
}

// ferry-agent reads its hub credential from the Secret hub-kubeconfig-secret mounted whole as a
// directory (a subPath mount would never see a rotated certificate), never creates that Secret, and
// keeps leader election on.
func TestAgentDeploymentsReadTheHubKubeconfigSecret(t *testing.T) {
	for _, in := range installs {
		if in.cluster != spokeCluster {
			continue
		}
		t.Run(in.dir, func(t *testing.T) {
			_, objs := render(t, in.dir)
			if secrets := ofKind[corev1.Secret](t, objs, "Secret"); len(secrets) > 0 {
				t.Errorf("deploy/%s renders the Secret %s/%s: the hub credential is made by clusteradm or `ferry-hub clusters add`, never by the install", in.dir, secrets[0].Namespace, secrets[0].Name)
			}
			d := ofKind[appsv1.Deployment](t, objs, "Deployment")[0]
			c := d.Spec.Template.Spec.Containers[0]
			if v, _ := flagValue(c.Args, "hub-kubeconfig-dir"); v != hubKubeconfigDir {
				t.Errorf("ferry-agent args %q: want --hub-kubeconfig-dir=%s", c.Args, hubKubeconfigDir)
			}
			if _, ok := flagValue(c.Args, "disable-leader-election"); ok {
				t.Errorf("ferry-agent args %q: leader election must stay on", c.Args)
			}
			i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == hubKubeconfigDir })
			if i < 0 {
				t.Fatalf("ferry-agent mounts nothing at %s", hubKubeconfigDir)
			}
			mount := c.VolumeMounts[i]
			if mount.SubPath != "" || !mount.ReadOnly {
				t.Errorf("ferry-agent mounts %s with subPath %q, readOnly %v: want the whole Secret, read-only", hubKubeconfigDir, mount.SubPath, mount.ReadOnly)
			}
			v := slices.IndexFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == mount.Name })
			if v < 0 {
				t.Fatalf("ferry-agent mounts volume %s, which the pod does not have", mount.Name)
			}
			secret := d.Spec.Template.Spec.Volumes[v].Secret
			if secret == nil || secret.SecretName != "hub-kubeconfig-secret" || len(secret.Items) > 0 {
				t.Errorf("ferry-agent's volume %s is %+v, want all of the Secret hub-kubeconfig-secret", mount.Name, d.Spec.Template.Spec.Volumes[v])
			}
		})
	}
}

// The clusteradm overlay runs in the klusterlet's namespace and leaves what the klusterlet owns
// alone: the namespace itself and the AppliedManifestWork and ClusterClaim CRDs.
func TestClusteradmOverlayUsesTheKlusterletNamespace(t *testing.T) {
	_, objs := render(t, "agent/clusteradm")
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace", "CustomResourceDefinition", "Secret":
			t.Errorf("the clusteradm overlay renders the %s %s, which the klusterlet owns", o.GetKind(), o.GetName())
		}
		if ns := o.GetNamespace(); ns != "" && ns != "open-cluster-management-agent" {
			t.Errorf("the clusteradm overlay renders %s %s in namespace %s, want open-cluster-management-agent", o.GetKind(), o.GetName(), ns)
		}
	}
}

func checkProbes(t *testing.T, d *appsv1.Deployment, c corev1.Container) {
	t.Helper()
	port := bindPort(t, c, "health-probe-bind-address")
	for _, p := range []struct {
		kind  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s has no HTTP %s probe", d.Name, p.kind)
			continue
		}
		if p.probe.HTTPGet.Path != p.path {
			t.Errorf("%s's %s probe gets %s, want %s", d.Name, p.kind, p.probe.HTTPGet.Path, p.path)
		}
		if got := containerPort(c, p.probe.HTTPGet.Port.String()); got != port {
			t.Errorf("%s's %s probe reaches port %d, but --health-probe-bind-address serves on %d", d.Name, p.kind, got, port)
		}
	}
}

func checkMetricsService(t *testing.T, d *appsv1.Deployment, c corev1.Container, services []*corev1.Service) {
	t.Helper()
	port := bindPort(t, c, "metrics-bind-address")
	podLabels := labels.Set(d.Spec.Template.Labels)
	for _, s := range services {
		if s.Namespace != d.Namespace || len(s.Spec.Selector) == 0 || !labels.SelectorFromSet(s.Spec.Selector).Matches(podLabels) {
			continue
		}
		for _, p := range s.Spec.Ports {
			if containerPort(c, p.TargetPort.String()) == port {
				return
			}
		}
	}
	t.Errorf("no Service in %s selects the pods of %s on the metrics port %d", d.Namespace, d.Name, port)
}

func checkServiceAccount(t *testing.T, d *appsv1.Deployment, objs []*unstructured.Unstructured) {
	t.Helper()
	sa := d.Spec.Template.Spec.ServiceAccountName
	if !slices.ContainsFunc(ofKind[corev1.ServiceAccount](t, objs, "ServiceAccount"), func(s *corev1.ServiceAccount) bool {
		return s.Name == sa && s.Namespace == d.Namespace
	}) {
		t.Errorf("%s runs as ServiceAccount %s/%s, which is not rendered", d.Name, d.Namespace, sa)
	}
	var subjects []rbacv1.Subject
	for _, b := range ofKind[rbacv1.RoleBinding](t, objs, "RoleBinding") {
		subjects = append(subjects, b.Subjects...)
	}
	for _, b := range ofKind[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding") {
		subjects = append(subjects, b.Subjects...)
	}
	if len(subjects) == 0 {
		t.Errorf("nothing is bound to %s's ServiceAccount", d.Name)
	}
	for _, s := range subjects {
		if s.Kind != rbacv1.ServiceAccountKind || s.Name != sa || s.Namespace != d.Namespace {
			t.Errorf("a binding names %s %s/%s; %s runs as ServiceAccount %s/%s", s.Kind, s.Namespace, s.Name, d.Name, d.Namespace, sa)
		}
	}
}

func checkLeaderElectionRole(t *testing.T, d *appsv1.Deployment, objs []*unstructured.Unstructured) {
	t.Helper()
	roles := ofKind[rbacv1.Role](t, objs, "Role")
	for _, b := range ofKind[rbacv1.RoleBinding](t, objs, "RoleBinding") {
		if b.Namespace != d.Namespace || b.RoleRef.Kind != "Role" {
			continue
		}
		i := slices.IndexFunc(roles, func(r *rbacv1.Role) bool { return r.Name == b.RoleRef.Name && r.Namespace == b.Namespace })
		if i < 0 {
			t.Errorf("RoleBinding %s/%s refers to Role %s, which is not rendered", b.Namespace, b.Name, b.RoleRef.Name)
			continue
		}
		for _, rule := range roles[i].Rules {
			if slices.Contains(rule.APIGroups, "coordination.k8s.io") && slices.Contains(rule.Resources, "leases") &&
				len(rule.ResourceNames) == 0 && hasAll(rule.Verbs, "get", "create", "update") {
				return
			}
		}
	}
	t.Errorf("no Role bound in %s lets %s get, create and update its leader-election Lease", d.Namespace, d.Name)
}

// flagValue returns the value of --name in args ("" for a bare boolean flag) and whether it is there.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		switch {
		case a == "--"+name:
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				return args[i+1], true
			}
			return "", true
		case strings.HasPrefix(a, "--"+name+"="):
			return strings.TrimPrefix(a, "--"+name+"="), true
		}
	}
	return "", false
}

// bindPort is the port of a host:port flag of the container.
func bindPort(t *testing.T, c corev1.Container, flag string) int32 {
	t.Helper()
	addr, ok := flagValue(c.Args, flag)
	if !ok {
		t.Fatalf("container %s has no --%s: give it explicitly, so that probes and Services cannot drift from the binary's default", c.Name, flag)
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("container %s: --%s=%s: %v", c.Name, flag, addr, err)
	}
	i := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return port == itoa(p.ContainerPort) })
	if i < 0 {
		t.Fatalf("container %s serves --%s on port %s, which it does not declare in ports", c.Name, flag, port)
	}
	return c.Ports[i].ContainerPort
}

// containerPort resolves a probe's or Service's port, a name or a number, to the container's port number.
func containerPort(c corev1.Container, port string) int32 {
	for _, p := range c.Ports {
		if p.Name == port || itoa(p.ContainerPort) == port {
			return p.ContainerPort
		}
	}
	return -1
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func hasAll(have []string, want ...string) bool {
	if slices.Contains(have, "*") {
		return true
	}
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
