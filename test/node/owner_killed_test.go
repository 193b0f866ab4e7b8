package node

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

// ownerEnv makes the test binary, run again by TestOwnerKilledWithPodsRunning, the owner to kill.
const ownerEnv = "FERRY_NODE_TEST_OWNER"

// An owner that dies with pods running on its real node — a go test timeout, Ctrl-C, SIGKILL — leaves
// nothing behind either: the guardian kills containerd, the shims and the containers, unmounts what
// the kubelet and containerd mounted, and removes the chains and the bridge.
func TestOwnerKilledWithPodsRunning(t *testing.T) {
	if os.Getenv(ownerEnv) == "1" {
		runOwner(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOwnerKilledWithPodsRunning$", "-test.v")
	cmd.Env = append(os.Environ(), ownerEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var output strings.Builder // written by the reader goroutine only until it sends
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The owner prints "DIR=<its environment's directory>", then READY once a pod runs.
	ready := make(chan string, 1)
	go func() {
		var dir string
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			line := scanner.Text()
			output.WriteString(line + "\n")
			if d, ok := strings.CutPrefix(line, "DIR="); ok {
				dir = d
			}
			if line == "READY" {
				ready <- dir
				_, _ = io.Copy(io.Discard, stdout)
				return
			}
		}
		close(ready)
	}()
	var dir string
	select {
	case d, ok := <-ready:
		if !ok {
			_ = cmd.Wait()
			t.Fatalf("the owner exited before its pod ran:\n%s", output.String())
		}
		dir = d
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("the owner did not get a pod running in 3 minutes")
	}
	if left := nodeLeftovers(t, dir); len(left) == 0 {
		t.Fatalf("with the owner's pod running, nothing of its node shows under %s: the check below would prove nothing", dir)
	}

	killed := time.Now()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	var left []string
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		left = nodeLeftovers(t, dir)
		return len(left) == 0, nil
	}); err != nil {
		t.Fatalf("a minute after the owner was killed, its real node left:\n%s", strings.Join(left, "\n"))
	}
	t.Logf("the guardian cleaned up %s after the owner was killed", time.Since(killed).Round(time.Millisecond))
}

// runOwner starts a cluster with a real node, runs a pod on it, reports and waits to be killed.
func runOwner(t *testing.T) {
	env, err := localcluster.Start(t.Context(), localcluster.Options{Hub: localcluster.ClusterSpec{Name: "hub", RealNode: true}})
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("DIR=" + env.Dir + "\n")
	kube, err := kubernetes.NewForConfig(env.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "idle", Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "pause", Image: localcluster.PauseImage, ImagePullPolicy: corev1.PullNever}},
		},
	}
	if _, err := kube.CoreV1().Pods(pod.Namespace).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, kube, pod.Namespace, pod.Name, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	os.Stdout.WriteString("READY\n")
	// The parent never writes; this returns only if the parent goes away first.
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = env.Stop()
}
