package deploy

import (
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ferry-mc/ferry/internal/testing/deployrunner"
)

// hubKubeconfigDir is where the agent reads the Secret hub-kubeconfig-secret, as OCM's work agent does.
const hubKubeconfigDir = "/spoke/hub-kubeconfig"

// The Secrets deploy/README.md has a user create before applying an agent install: the hub credential,
// and for the cloudevents overlays the source's configuration.
const (
	hubKubeconfigSecret  = "hub-kubeconfig-secret"
	workloadSourceSecret = "ferry-agent-workload-source"
	// workloadSourceConfigKey is the key of workloadSourceSecret that --workload-source-config reads.
	workloadSourceConfigKey = "config.yaml"
)

// userSecrets are those Secrets with made-up content in the layout deploy/README.md gives: what the
// agent's pod finds at their mounts and in env read from them.
var userSecrets = map[string]map[string]string{
	hubKubeconfigSecret: {
		"kubeconfig":   "apiVersion: v1\nkind: Config\n",
		"tls.crt":      "",
		"tls.key":      "",
		"cluster-name": "cluster1",
	},
	workloadSourceSecret: {
		workloadSourceConfigKey: "url: hub-grpc.example.com:8090\ncaFile: /spoke/workload-source/ca.crt\n" +
			"clientCertFile: /spoke/workload-source/tls.crt\nclientKeyFile: /spoke/workload-source/tls.key\n",
		"ca.crt":       "",
		"tls.crt":      "",
		"tls.key":      "",
		"cluster-name": "cluster1",
	},
}

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
				if d.Name == "ferry-agent" {
					checkEventsRole(t, objs)
				}
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
// keeps leader election on; its own validation takes the args as rendered, with the cluster name from
// the Secret.
func TestAgentDeploymentsReadTheHubKubeconfigSecret(t *testing.T) {
	for _, in := range installs {
		if in.cluster != spokeCluster || in.driver != "" {
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
			if secret == nil || secret.SecretName != hubKubeconfigSecret || len(secret.Items) > 0 {
				t.Errorf("ferry-agent's volume %s is %+v, want all of the Secret %s", mount.Name, d.Spec.Template.Spec.Volumes[v], hubKubeconfigSecret)
			}
			o := completeAgentInPod(t, d)
			if o.SpokeClusterName != userSecrets[hubKubeconfigSecret]["cluster-name"] {
				t.Errorf("ferry-agent takes the cluster name %q, want the Secret's cluster-name %q", o.SpokeClusterName, userSecrets[hubKubeconfigSecret]["cluster-name"])
			}
		})
	}
}

// ferry-agent over a cloudevents driver reads its source's configuration file from the Secret
// ferry-agent-workload-source, mounted whole and read-only (so that a changed file or a renewed
// certificate reaches it) at the directory --workload-source-config points into; it has no hub
// kubeconfig to read, never creates that Secret, and keeps leader election on. Its own validation
// takes the args as rendered with that Secret's files at the mount, and completes them to the
// driver, the cluster name the Secret holds, and no hub kubeconfig.
func TestCloudEventsAgentDeploymentsReadTheWorkloadSourceSecret(t *testing.T) {
	var tested int
	for _, in := range installs {
		if in.driver == "" {
			continue
		}
		tested++
		t.Run(in.dir, func(t *testing.T) {
			_, objs := render(t, in.dir)
			if secrets := ofKind[corev1.Secret](t, objs, "Secret"); len(secrets) > 0 {
				t.Errorf("deploy/%s renders the Secret %s/%s: the source's configuration and credentials are the user's, never the install's", in.dir, secrets[0].Namespace, secrets[0].Name)
			}
			d := ofKind[appsv1.Deployment](t, objs, "Deployment")[0]
			spec := d.Spec.Template.Spec
			c := spec.Containers[0]
			if v, _ := flagValue(c.Args, "workload-source-driver"); v != in.driver {
				t.Errorf("ferry-agent args %q: want --workload-source-driver=%s", c.Args, in.driver)
			}
			for _, flag := range []string{"hub-kubeconfig", "hub-kubeconfig-dir"} {
				if _, ok := flagValue(c.Args, flag); ok {
					t.Errorf("ferry-agent args %q: --%s given; over %s the works come from the source, not a hub API server", c.Args, flag, in.driver)
				}
			}
			if slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == hubKubeconfigSecret }) {
				t.Errorf("deploy/%s still mounts the Secret %s, which no user of %s creates: the pod would wait for it forever", in.dir, hubKubeconfigSecret, in.driver)
			}
			if _, ok := flagValue(c.Args, "disable-leader-election"); ok {
				t.Errorf("ferry-agent args %q: leader election must stay on", c.Args)
			}

			config, ok := flagValue(c.Args, "workload-source-config")
			if !ok {
				t.Fatalf("ferry-agent args %q: no --workload-source-config", c.Args)
			}
			i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
				return path.Join(m.MountPath, path.Base(config)) == path.Clean(config)
			})
			if i < 0 {
				t.Fatalf("--workload-source-config=%s lies in no directory ferry-agent mounts: %+v", config, c.VolumeMounts)
			}
			mount := c.VolumeMounts[i]
			if mount.SubPath != "" || !mount.ReadOnly {
				t.Errorf("ferry-agent mounts %s with subPath %q, readOnly %v: want the whole Secret, read-only", mount.MountPath, mount.SubPath, mount.ReadOnly)
			}
			v := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == mount.Name })
			if v < 0 {
				t.Fatalf("ferry-agent mounts volume %s, which the pod does not have", mount.Name)
			}
			if secret := spec.Volumes[v].Secret; secret == nil || secret.SecretName != workloadSourceSecret || len(secret.Items) > 0 {
				t.Errorf("--workload-source-config=%s lies in volume %s, which is %+v: want all of the Secret %s", config, mount.Name, spec.Volumes[v], workloadSourceSecret)
			}
			if key := path.Base(config); key != workloadSourceConfigKey {
				t.Errorf("--workload-source-config=%s reads the Secret's key %s; deploy/README.md has users create it with %s", config, key, workloadSourceConfigKey)
			}

			o := completeAgentInPod(t, d)
			want := AgentOptions{
				WorkloadSourceDriver: in.driver,
				WorkloadSourceConfig: path.Clean(config),
				SpokeClusterName:     userSecrets[workloadSourceSecret]["cluster-name"],
				CloudEventsClientID:  userSecrets[workloadSourceSecret]["cluster-name"] + "-work-agent",
			}
			if o != want {
				t.Errorf("ferry-agent completes its args %q to\n%+v, want\n%+v", c.Args, o, want)
			}
		})
	}
	if tested == 0 {
		t.Fatal("no install runs ferry-agent over a cloudevents driver: see installs in deploy/render_test.go")
	}
}

// expandArgs returns the args of the Deployment's container as the kubelet expands them in a pod of
// it, with env read from a Secret taken from userSecrets.
func expandArgs(d *appsv1.Deployment) ([]string, error) {
	c := *d.Spec.Template.Spec.Containers[0].DeepCopy()
	for i, e := range c.Env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		value, ok := userSecrets[ref.Name][ref.Key]
		if !ok {
			return nil, fmt.Errorf("container %s: env %s reads key %s of the Secret %s, which deploy/README.md does not have users create", c.Name, e.Name, ref.Key, ref.Name)
		}
		c.Env[i] = corev1.EnvVar{Name: e.Name, Value: value}
	}
	return deployrunner.ExpandArgs(c, deployrunner.PodFields(d.Namespace, d.Name+"-0"))
}

// completeAgentInPod has ferry-agent complete and validate the args of its Deployment as it does when
// it starts in a pod of it: the args expanded by expandArgs, and each Secret the container mounts laid
// out from userSecrets in a directory that stands for its mount path (the paths in the args moved
// there), so that a flag naming a file outside the mounts, or a key the Secret lacks, fails here.
// Paths in the returned options are given back as the pod sees them.
func completeAgentInPod(t *testing.T, d *appsv1.Deployment) AgentOptions {
	t.Helper()
	if completeAgentArgs == nil {
		t.Fatal("completeAgentArgs is not set: agentargs_test.go sets it")
	}
	args, err := expandArgs(d)
	if err != nil {
		t.Fatal(err)
	}
	spec := d.Spec.Template.Spec
	moved := map[string]string{} // mount path in the pod → directory here
	for _, m := range spec.Containers[0].VolumeMounts {
		v := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if v < 0 || spec.Volumes[v].Secret == nil {
			continue
		}
		secret := spec.Volumes[v].Secret
		data, ok := userSecrets[secret.SecretName]
		if !ok || len(secret.Items) > 0 || m.SubPath != "" {
			t.Fatalf("%s mounts the Secret %s (items %v, subPath %q): not a whole Secret deploy/README.md has users create", d.Name, secret.SecretName, secret.Items, m.SubPath)
		}
		dir := t.TempDir()
		for key, value := range data {
			if err := os.WriteFile(filepath.Join(dir, key), []byte(value), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		moved[m.MountPath] = dir
	}
	for i, a := range args {
		for mountPath, dir := range moved {
			args[i] = movePath(a, mountPath, dir)
			if args[i] != a {
				break
			}
		}
	}
	o, err := completeAgentArgs(args)
	if err != nil {
		t.Fatalf("ferry-agent refuses the args of deploy's Deployment %s/%s %q: %v", d.Namespace, d.Name, args, err)
	}
	for _, p := range []*string{&o.WorkloadSourceConfig, &o.HubKubeconfig, &o.HubKubeconfigDir} {
		for mountPath, dir := range moved {
			*p = movePath(*p, dir, mountPath)
		}
	}
	return o
}

// movePath returns arg, a path or --flag=path, with a path at or under from moved to the same place
// under to.
func movePath(arg, from, to string) string {
	prefix, p := "", arg
	if flag, value, ok := strings.Cut(arg, "="); ok && strings.HasPrefix(flag, "-") {
		prefix, p = flag+"=", value
	}
	if p != from && !strings.HasPrefix(p, from+"/") {
		return arg
	}
	return prefix + to + strings.TrimPrefix(p, from)
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

// checkEventsRole: ferry-agent records Events on the objects it acts on, in any namespace, by a
// ClusterRole of its own that grants exactly that (create and patch core Events), so that they stay when
// its wildcard ClusterRole shrinks.
func checkEventsRole(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	roles := ofKind[rbacv1.ClusterRole](t, objs, "ClusterRole")
	for _, b := range ofKind[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding") {
		i := slices.IndexFunc(roles, func(r *rbacv1.ClusterRole) bool { return r.Name == b.RoleRef.Name })
		if i < 0 || len(roles[i].Rules) != 1 {
			continue
		}
		rule := roles[i].Rules[0]
		if slices.Equal(rule.APIGroups, []string{""}) && slices.Equal(rule.Resources, []string{"events"}) &&
			len(rule.ResourceNames) == 0 && len(rule.Verbs) == 2 && hasAll(rule.Verbs, "create", "patch") {
			return
		}
	}
	t.Error("no ClusterRole of ferry-agent grants exactly create and patch of core Events everywhere")
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
