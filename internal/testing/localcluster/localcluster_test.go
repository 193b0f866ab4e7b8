package localcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
)

var (
	hubCRDNames = []string{
		"applicationconfigurations.core.oam.dev",
		"components.core.oam.dev",
		"managedclusters.cluster.open-cluster-management.io",
		"managedclustersetbindings.cluster.open-cluster-management.io",
		"managedclustersets.cluster.open-cluster-management.io",
		"manifestworks.work.open-cluster-management.io",
		"placementdecisions.cluster.open-cluster-management.io",
		"placements.cluster.open-cluster-management.io",
		"traitdefinitions.core.oam.dev",
		"workloaddefinitions.core.oam.dev",
	}
	spokeCRDNames = []string{"appliedmanifestworks.work.open-cluster-management.io", "clusterclaims.cluster.open-cluster-management.io"}
)

func TestHubAndTwoSpokes(t *testing.T) {
	env, err := Start(t.Context(), Options{Spokes: []ClusterSpec{
		{Name: "cluster1", ControllerManager: true},
		{Name: "cluster2"},
	}})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = env.Stop()
		}
	})
	for _, c := range env.Clusters() {
		t.Logf("%s: %s ready in %s", c.Name, c.URL(), c.Ready.Sub(c.Started).Round(time.Millisecond))
	}

	t.Run("clusters start in parallel", func(t *testing.T) {
		// Started one after another, each cluster would be ready before the next began.
		var lastStart, firstReady time.Time
		for _, c := range env.Clusters() {
			if c.Started.After(lastStart) {
				lastStart = c.Started
			}
			if firstReady.IsZero() || c.Ready.Before(firstReady) {
				firstReady = c.Ready
			}
		}
		if !lastStart.Before(firstReady) {
			t.Errorf("the last cluster started at %s, after the first was ready at %s", lastStart, firstReady)
		}
	})

	t.Run("each cluster has its own API server and storage", func(t *testing.T) {
		urls := map[string]string{}
		for _, c := range env.Clusters() {
			if other, dup := urls[c.URL()]; dup {
				t.Fatalf("%s and %s share the API server %s", c.Name, other, c.URL())
			}
			urls[c.URL()] = c.Name
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "only-on-" + c.Name}}
			if _, err := clientset(t, c).CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create namespace on %s: %v", c.Name, err)
			}
		}
		for _, c := range env.Clusters() {
			for _, other := range env.Clusters() {
				_, err := clientset(t, c).CoreV1().Namespaces().Get(t.Context(), "only-on-"+other.Name, metav1.GetOptions{})
				switch {
				case c == other && err != nil:
					t.Errorf("%s: its own namespace: %v", c.Name, err)
				case c != other && !apierrors.IsNotFound(err):
					t.Errorf("%s: namespace created on %s: want NotFound, got %v", c.Name, other.Name, err)
				}
			}
		}
	})

	t.Run("CRDs are established on each side", func(t *testing.T) {
		for _, c := range env.Clusters() {
			want, absent := spokeCRDNames, hubCRDNames
			if c.Hub {
				want, absent = hubCRDNames, spokeCRDNames
			}
			cs, err := apiextensionsclient.NewForConfig(c.Config)
			if err != nil {
				t.Fatal(err)
			}
			list, err := cs.ApiextensionsV1().CustomResourceDefinitions().List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatalf("%s: list CRDs: %v", c.Name, err)
			}
			var established []string
			for _, crd := range list.Items {
				if slices.Contains(absent, crd.Name) {
					t.Errorf("%s: CRD %s belongs to the other side", c.Name, crd.Name)
				}
				if isEstablished(&crd) {
					established = append(established, crd.Name)
				}
			}
			slices.Sort(established)
			if !slices.Equal(established, want) {
				t.Errorf("%s: established CRDs = %v, want %v", c.Name, established, want)
			}
		}
	})

	t.Run("spokes are registered on the hub as accepted managed clusters", func(t *testing.T) {
		for range 2 { // the second time finds everything in place
			if err := env.RegisterSpokes(t.Context()); err != nil {
				t.Fatalf("register spokes: %v", err)
			}
		}
		mcs, err := clusterclient.NewForConfig(env.Hub.Config)
		if err != nil {
			t.Fatal(err)
		}
		list, err := mcs.ClusterV1().ManagedClusters().List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, mc := range list.Items {
			names = append(names, mc.Name)
			if !mc.Spec.HubAcceptsClient {
				t.Errorf("ManagedCluster %s is not accepted", mc.Name)
			}
		}
		if want := []string{"cluster1", "cluster2"}; !slices.Equal(names, want) {
			t.Errorf("ManagedClusters on the hub = %v, want %v", names, want)
		}
		for _, name := range names {
			if _, err := clientset(t, env.Hub).CoreV1().Namespaces().Get(t.Context(), name, metav1.GetOptions{}); err != nil {
				t.Errorf("cluster namespace %s on the hub: %v", name, err)
			}
		}
	})

	t.Run("kubeconfig reaches its cluster by the cluster's context name", func(t *testing.T) {
		for _, c := range env.Clusters() {
			raw, err := clientcmd.LoadFromFile(c.Kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			if raw.CurrentContext != c.Name {
				t.Errorf("%s: current context %q", c.Name, raw.CurrentContext)
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cs.CoreV1().Namespaces().Get(t.Context(), "only-on-"+c.Name, metav1.GetOptions{}); err != nil {
				t.Errorf("%s: through %s: %v", c.Name, c.Kubeconfig, err)
			}
		}
	})

	t.Run("kube-controller-manager collects garbage on the spoke that runs it", func(t *testing.T) {
		cs := clientset(t, env.Spoke("cluster1"))
		owner, err := cs.CoreV1().ConfigMaps("default").Create(t.Context(),
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
		}}}}
		if _, err := cs.CoreV1().ConfigMaps("default").Create(t.Context(), dependent, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().ConfigMaps("default").Delete(t.Context(), owner.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		err = poll(t.Context(), time.Minute, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().ConfigMaps("default").Get(ctx, dependent.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), ignoreNotFound(err)
		})
		if err != nil {
			t.Errorf("dependent of a deleted owner was not garbage-collected: %v", err)
		}
	})

	t.Run("workloads on the spoke with kube-controller-manager", func(t *testing.T) {
		testWorkloads(t, env.Spoke("cluster1"))
	})

	t.Run("only a spoke with kube-controller-manager has nodes", func(t *testing.T) {
		for _, c := range []*Cluster{env.Hub, env.Spoke("cluster2")} {
			nodes, err := clientset(t, c).CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(nodes.Items) != 0 || len(c.Nodes) != 0 {
				t.Errorf("%s has nodes %v (%d listed), want none", c.Name, c.Nodes, len(nodes.Items))
			}
		}
	})

	// Record the processes before stopping, so that the check after it cannot pass by finding nothing.
	want := map[string][]string{
		"hub":      {"etcd", "kube-apiserver"},
		"cluster1": {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"},
		"cluster2": {"etcd", "kube-apiserver"},
	}
	var pids []int
	dirs := env.ownedDirs()
	for _, c := range env.Clusters() {
		procs, err := c.Processes()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range procs {
			names = append(names, p.Name)
			pids = append(pids, p.PID)
		}
		slices.Sort(names)
		if !slices.Equal(names, want[c.Name]) {
			t.Errorf("%s runs %v, want %v", c.Name, names, want[c.Name])
		}
	}

	stopped = true
	if err := env.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}

	t.Run("nothing is left after stop", func(t *testing.T) {
		for _, pid := range pids {
			if ProcessAlive(pid) {
				t.Errorf("process %d still running", pid)
			}
		}
		if procs, err := processesUnder(env.Dir); err != nil || len(procs) > 0 {
			t.Errorf("processes under %s: %v, %v", env.Dir, procs, err)
		}
		if len(dirs) != 1+len(env.Clusters()) {
			t.Errorf("directories made: %v, want the environment's and one webhook certificate directory per cluster", dirs)
		}
		for _, d := range dirs {
			if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s still exists: %v", d, err)
			}
		}
	})
}

const childEnv = "FERRY_LOCALCLUSTER_TEST_CHILD"

// An owner that dies without stopping its clusters — a go test timeout, Ctrl-C, SIGKILL — leaves no
// control-plane process and no directory behind.
func TestOwnerKilledLeavesNothingBehind(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		runChildOwner(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOwnerKilledLeavesNothingBehind$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	childOut := &syncBuffer{}
	cmd.Stderr = childOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The child prints "OWNEDDIR=<dir>" for every directory it made, its environment's first, then READY.
	ready := make(chan []string, 1)
	go func() {
		var dirs []string
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			line := scanner.Text()
			_, _ = childOut.Write([]byte(line + "\n"))
			if d, ok := strings.CutPrefix(line, "OWNEDDIR="); ok {
				dirs = append(dirs, d)
			}
			if line == "READY" {
				ready <- dirs
			}
		}
		close(ready)
	}()
	var dir string
	var owned []string
	select {
	case d, ok := <-ready:
		if !ok {
			_ = cmd.Wait()
			t.Fatalf("child exited before its clusters were up:\n%s", childOut.String())
		}
		owned, dir = d, d[0]
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("child did not bring its clusters up in time:\n%s", childOut.String())
	}

	procs, err := processesUnder(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range procs {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	// The hub's etcd and kube-apiserver, and the spoke's with its kube-controller-manager, kube-scheduler
	// and kwok.
	wantNames := []string{"etcd", "etcd", "kube-apiserver", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}
	if !slices.Equal(names, wantNames) {
		t.Fatalf("before the kill, want %v under %s, got %v", wantNames, dir, procs)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	err = poll(t.Context(), time.Minute, func(context.Context) (bool, error) {
		left, err := processesUnder(dir)
		if err != nil || len(left) > 0 {
			return false, err
		}
		for _, d := range owned {
			if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		left, _ := processesUnder(dir)
		t.Fatalf("after the owner was killed: processes %v, directories %v: %v", left, owned, err)
	}
}

// runChildOwner starts a cluster, reports its directory and waits to be killed.
func runChildOwner(t *testing.T) {
	env, err := Start(t.Context(), Options{Spokes: []ClusterSpec{{Name: "spoke", ControllerManager: true}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range env.ownedDirs() {
		fmt.Printf("OWNEDDIR=%s\n", d)
	}
	fmt.Println("READY")
	// The parent never writes; this returns only if the parent goes away first.
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = env.Stop()
}

// syncBuffer collects a child's output from more than one goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func clientset(t *testing.T, c *Cluster) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func isEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

func poll(ctx context.Context, timeout time.Duration, cond wait.ConditionWithContextFunc) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, cond)
}
