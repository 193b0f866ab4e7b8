package podinstall

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

// Images are the archives BuildImages writes, by image name, as `make images` names them.
var Images = []string{"ferry-hub", "ferry-agent"}

// Namespaces of the two installs, as deploy/ names them.
const (
	HubNamespace   = "ferry-system"
	AgentNamespace = "ferry-agent"
)

// ReadyTimeout bounds the wait for a Deployment's pod: one of an imported image runs within seconds.
const ReadyTimeout = 3 * time.Minute

// BuildImages builds Ferry's images from the checkout at root into dir, as `make images` does
// (hack/image): dir/<image>.tar for each of Images, tagged as deploy/ runs them.
func BuildImages(ctx context.Context, root, dir string) error {
	cmd := exec.CommandContext(ctx, "go", "run", "./hack/image", "--out", dir)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build the images (go run ./hack/image): %w\n%s", err, out)
	}
	return nil
}

// Installer installs Ferry from the kustomizations in DeployDir (a checkout's deploy/) onto Cluster,
// which has a real node.
type Installer struct {
	DeployDir string
	Cluster   *localcluster.Cluster
	// HubCLI is the ferry-hub binary whose `clusters add` registers a cluster.
	HubCLI string
	// Log receives each command run and its output; nil discards them.
	Log func(format string, args ...any)
}

func (in *Installer) logf(format string, args ...any) {
	if in.Log != nil {
		in.Log(format, args...)
	}
}

// ImportImages imports the archives BuildImages wrote into dir into the node's containerd, and
// returns how long each took.
func (in *Installer) ImportImages(ctx context.Context, dir string) (map[string]time.Duration, error) {
	took := map[string]time.Duration{}
	for _, image := range Images {
		start := time.Now()
		if err := in.Cluster.RealNode.ImportImage(ctx, filepath.Join(dir, image+".tar")); err != nil {
			return took, err
		}
		took[image] = time.Since(start)
	}
	return took, nil
}

// InstallHub runs `kubectl apply -k deploy/hub` and applies the ClusterRole of agents' hub credentials
// (deploy/agent/hub-clusterrole.yaml), then waits for ferry-hub's pod to be Ready.
func (in *Installer) InstallHub(ctx context.Context) (*corev1.Pod, error) {
	if err := in.Kubectl(ctx, "apply", "-k", filepath.Join(in.DeployDir, "hub")); err != nil {
		return nil, err
	}
	if err := in.Kubectl(ctx, "apply", "-f", filepath.Join(in.DeployDir, "agent", "hub-clusterrole.yaml")); err != nil {
		return nil, err
	}
	return in.WaitDeploymentReady(ctx, HubNamespace, "ferry-hub")
}

// Register registers the cluster with its own hub under name, with `ferry-hub clusters add`, which
// writes the agent's Secret hub-kubeconfig-secret into namespace ferry-agent. Run again, it writes
// the credential anew (a new token if the old token's Secret is gone).
func (in *Installer) Register(ctx context.Context, name string, extraArgs ...string) error {
	args := append([]string{"clusters", "add", name, "--kubeconfig", in.Cluster.Kubeconfig, "--spoke-kubeconfig", in.Cluster.Kubeconfig}, extraArgs...)
	return in.run(ctx, in.HubCLI, args...)
}

// InstallAgent runs `kubectl apply -k deploy/agent/spoke`; it does not wait (see WaitDeploymentReady).
func (in *Installer) InstallAgent(ctx context.Context) error {
	return in.Kubectl(ctx, "apply", "-k", filepath.Join(in.DeployDir, "agent", "spoke"))
}

// Kubectl runs kubectl with the cluster's admin kubeconfig.
func (in *Installer) Kubectl(ctx context.Context, args ...string) error {
	return in.run(ctx, "kubectl", append([]string{"--kubeconfig", in.Cluster.Kubeconfig}, args...)...)
}

func (in *Installer) run(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	in.logf("%s %s\n%s", filepath.Base(name), strings.Join(args, " "), out)
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return nil
}

// WaitDeploymentReady waits, up to ReadyTimeout, until Deployment namespace/name is Available with a
// Ready pod, and returns that pod; the error says what its pods were doing.
func (in *Installer) WaitDeploymentReady(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	kube, err := kubernetes.NewForConfig(in.Cluster.Config)
	if err != nil {
		return nil, err
	}
	var ready *corev1.Pod
	last := "no Deployment yet"
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		d, err := kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		pods, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.Set(d.Spec.Selector.MatchLabels).String()})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = DescribePods(pods.Items)
		for i := range pods.Items {
			if p := &pods.Items[i]; p.DeletionTimestamp == nil && PodReady(p) {
				ready = p
				return deploymentAvailable(d), nil
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("Deployment %s/%s has no Ready pod: %w; %s", namespace, name, err, last)
	}
	return ready, nil
}

func deploymentAvailable(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PodReady says whether the pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// DescribePods says in one line per pod what each is doing: phase, readiness, each container's state
// and restarts.
func DescribePods(pods []corev1.Pod) string {
	var b strings.Builder
	for i := range pods {
		p := &pods[i]
		fmt.Fprintf(&b, "pod %s %s ready=%t", p.Name, p.Status.Phase, PodReady(p))
		for _, s := range p.Status.ContainerStatuses {
			switch {
			case s.State.Waiting != nil:
				fmt.Fprintf(&b, " %s waiting %s: %s", s.Name, s.State.Waiting.Reason, s.State.Waiting.Message)
			case s.State.Terminated != nil:
				fmt.Fprintf(&b, " %s terminated %s: %s", s.Name, s.State.Terminated.Reason, s.State.Terminated.Message)
			}
			fmt.Fprintf(&b, " restarts=%d", s.RestartCount)
		}
		b.WriteString("; ")
	}
	return b.String()
}
