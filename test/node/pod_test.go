package node

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ferry-mc/ferry/internal/testing/gobuild"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/internal/testing/podinstall"
)

// probeImage is the tag the probe program is imported under; only the node has it, so a pod of it
// runs only if nothing is pulled.
const probeImage = "ferry.io/node-probe:test"

// probeResult is what the probe reports (see probe/main.go).
type probeResult struct {
	APIServer  string `json:"apiServer"`
	User       string `json:"user"`
	GitVersion string `json:"gitVersion"`
}

func TestPodsRunOnARealNode(t *testing.T) {
	ctx := t.Context()
	start := time.Now()
	env := localcluster.StartForTest(t, localcluster.Options{Hub: localcluster.ClusterSpec{Name: "hub", RealNode: true}})
	c := env.Hub
	node := c.RealNode
	t.Logf("cluster with a real node started in %s (node %s: %s from containerd's start to Ready with kube-proxy's rules written)",
		time.Since(start).Round(time.Millisecond), node.Name, node.Ready.Sub(node.Started).Round(time.Millisecond))
	kube, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a pod of the sandbox image runs", func(t *testing.T) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "idle", Namespace: metav1.NamespaceDefault},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "pause", Image: localcluster.PauseImage, ImagePullPolicy: corev1.PullNever}},
			},
		}
		created := time.Now()
		if _, err := kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod: %v", err)
		}
		got := waitPod(t, kube, pod.Namespace, pod.Name, func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning && podinstall.PodReady(p)
		})
		t.Logf("pod Running and Ready %s after its creation, on %s at %s", time.Since(created).Round(time.Millisecond), got.Spec.NodeName, got.Status.PodIP)
		if got.Spec.NodeName != node.Name {
			t.Errorf("pod scheduled to %q, want the real node %q", got.Spec.NodeName, node.Name)
		}
	})

	t.Run("a pod reaches the API server with its service-account token through the kubernetes Service", func(t *testing.T) {
		archive := buildProbeImage(t)
		imported := time.Now()
		if err := node.ImportImage(ctx, archive); err != nil {
			t.Fatal(err)
		}
		t.Logf("probe image imported in %s", time.Since(imported).Round(time.Millisecond))

		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: metav1.NamespaceDefault},
			StringData: map[string]string{"greeting": "hello from a Secret volume"},
		}
		if _, err := kube.CoreV1().Secrets(secret.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create secret: %v", err)
		}
		pod := probePod(secret)
		created := time.Now()
		if _, err := kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod: %v", err)
		}
		got := waitPod(t, kube, pod.Namespace, pod.Name, func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		})
		t.Logf("probe pod %s %s after its creation", got.Status.Phase, time.Since(created).Round(time.Millisecond))
		if len(got.Status.ContainerStatuses) != 1 || got.Status.ContainerStatuses[0].State.Terminated == nil {
			t.Fatalf("probe container has not terminated: %+v", got.Status.ContainerStatuses)
		}
		term := got.Status.ContainerStatuses[0].State.Terminated
		if term.ExitCode != 0 || got.Status.Phase != corev1.PodSucceeded {
			t.Fatalf("probe pod %s, exit code %d: %s", got.Status.Phase, term.ExitCode, term.Message)
		}
		var res probeResult
		if err := json.Unmarshal([]byte(term.Message), &res); err != nil {
			t.Fatalf("probe's termination message %q: %v", term.Message, err)
		}

		svc, err := kube.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := "https://" + svc.Spec.ClusterIP + ":443"; res.APIServer != want {
			t.Errorf("probe reached the API server at %s, want the kubernetes Service %s", res.APIServer, want)
		}
		if want := "system:serviceaccount:" + pod.Namespace + ":default"; res.User != want {
			t.Errorf("the API server took the probe for %q, want %q", res.User, want)
		}
		version, err := kube.Discovery().ServerVersion()
		if err != nil {
			t.Fatal(err)
		}
		if res.GitVersion != version.GitVersion {
			t.Errorf("probe got version %q, want %q", res.GitVersion, version.GitVersion)
		}

		// The API server fetches logs from the kubelet: its address, serving certificate and client
		// certificate all have to be right.
		logs, err := kube.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Fatalf("pod logs through the kubelet: %v", err)
		}
		if got := strings.TrimSpace(string(logs)); got != term.Message {
			t.Errorf("pod logs %q, want the probe's output %q", got, term.Message)
		}
	})

	t.Run("stopping leaves nothing behind", func(t *testing.T) {
		if err := env.Stop(); err != nil {
			t.Fatalf("stop: %v", err)
		}
		for _, leftover := range nodeLeftovers(t, env.Dir) {
			t.Error(leftover)
		}
	})
}

// buildProbeImage builds the probe program as a static binary and packs it as a docker archive tagged
// probeImage; it returns the archive's path.
func buildProbeImage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "probe")
	cmd := gobuild.Command(t.Context(), "", bin, "./probe")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the probe: %v\n%s", err, out)
	}
	archive := filepath.Join(dir, "probe.tar")
	if err := localcluster.WriteImageArchive(archive, probeImage, bin); err != nil {
		t.Fatal(err)
	}
	return archive
}

// probePod runs the probe once, as a pod of the restricted Pod Security Standard would: a non-root
// user, a read-only root filesystem, no privilege escalation, no capabilities.
func probePod(secret *corev1.Secret) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: secret.Namespace},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            "probe",
				Image:           probeImage,
				ImagePullPolicy: corev1.PullNever,
				Env: []corev1.EnvVar{
					{Name: "PROBE_SECRET_FILE", Value: "/etc/probe/greeting"},
					{Name: "PROBE_SECRET_VALUE", Value: secret.StringData["greeting"]},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "secret", MountPath: "/etc/probe", ReadOnly: true}},
				SecurityContext: &corev1.SecurityContext{
					ReadOnlyRootFilesystem:   ptr.To(true),
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
			Volumes: []corev1.Volume{{
				Name:         "secret",
				VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret.Name}},
			}},
		},
	}
}

// waitPod polls the pod until done says it is, for up to a minute, and returns it.
func waitPod(t *testing.T, kube kubernetes.Interface, namespace, name string, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var pod *corev1.Pod
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pod = p
		return done(p), nil
	})
	if err != nil {
		status := "never seen"
		if pod != nil {
			data, _ := json.Marshal(pod.Status)
			status = string(data)
		}
		t.Fatalf("pod %s/%s: %v; status: %s", namespace, name, err, status)
	}
	return pod
}

// nodeLeftovers lists what a stopped real node left on the machine: processes or mounts naming its
// directory, iptables chains of kube-proxy, the kubelet or the pods' network, the pods' bridge.
func nodeLeftovers(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	if _, err := os.Stat(dir); err == nil {
		out = append(out, "the environment's directory "+dir+" is still there")
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, dir) {
			out = append(out, "mount left: "+line)
		}
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), dir) {
			out = append(out, fmt.Sprintf("process %s left: %s", e.Name(), strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	for _, tool := range []string{"iptables-save", "ip6tables-save"} {
		saved, err := exec.Command(tool).Output()
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		for _, line := range strings.Split(string(saved), "\n") {
			if strings.HasPrefix(line, ":KUBE-") || strings.Contains(line, "ferry-localcluster") {
				out = append(out, tool+" left: "+line)
			}
		}
	}
	if err := exec.Command("ip", "link", "show", "ferry-pods0").Run(); err == nil {
		out = append(out, "the pods' bridge ferry-pods0 is still there")
	}
	// What the kubelet, the shims and the CNI library write outside the cluster's directory.
	for _, pattern := range []string{"/var/log/containers/*", "/run/containerd/s/*", "/var/lib/cni/results/*", "/var/lib/kubelet/device-plugins/*", "/sys/fs/cgroup/*/kubepods"} {
		found, _ := filepath.Glob(pattern)
		for _, f := range found {
			out = append(out, "left: "+f)
		}
	}
	return out
}
