package localcluster

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// A spoke with kube-controller-manager runs workloads, so it gets what a real cluster has beyond its
// control plane: kube-scheduler, and nodes whose kubelets kwok simulates. Pods are then scheduled by
// the real scheduler (a nodeSelector that no node matches leaves a pod Pending), kwok reports them
// Running and Ready (and the pods of Jobs Succeeded), and kube-controller-manager turns that into the
// real status of Deployments, StatefulSets, DaemonSets and Jobs.

// kwokStages are the kwok Stages the simulated kubelets play, from kwok's own stage library: a node
// becomes Ready (and, with its Lease renewed, stays so); a pod becomes Running and Ready, a pod of a Job
// then Succeeded, a deleted pod goes; a pod labelled pod-container-running-failed.stage.kwok.x-k8s.io=true
// fails about a second after it runs, for tests of failing workloads. They are passed explicitly rather
// than left to kwok's built-in defaults: those pick the ten-minute status heartbeat exactly when no
// Lease is kept (the node controller then marks the nodes unreachable and evicts their pods), and later
// kwok releases have no defaults at all.
//
//go:embed kwok/*.yaml
var kwokStages embed.FS

const (
	// spokeNodes is how many nodes every spoke has: enough to tell one pod per node (a DaemonSet)
	// from all pods on one, and to spread over zones.
	spokeNodes = 3
	// kwokNodeAnnotation marks the nodes kwok manages, as in kwok's documentation.
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	// nodeLeaseSeconds is the nodes' Lease duration; kwok renews each Lease every quarter of it, as a
	// kubelet does, so kube-controller-manager's node lifecycle controller sees healthy nodes.
	nodeLeaseSeconds = 40
)

// startNodes starts kube-scheduler and kwok against the spoke, registers its nodes and waits until
// every node is Ready and free of taints, that is until pods can be scheduled. It records what it
// started in c as it goes, so that c.stop stops it on error too.
func (c *Cluster) startNodes(ctx context.Context, binDir string) error {
	var err error
	if c.scheduler, err = startScheduler(c, binDir); err != nil {
		return fmt.Errorf("start %s kube-scheduler: %w", c.Name, err)
	}
	if c.kwok, err = startKwok(c, binDir); err != nil {
		return fmt.Errorf("start %s kwok: %w", c.Name, err)
	}
	kube, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	for i := range spokeNodes {
		node := simulatedNode(c.Name, i)
		if _, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("register %s node %s: %w", c.Name, node.Name, err)
		}
		c.Nodes = append(c.Nodes, node.Name)
	}
	if err := c.waitNodesSchedulable(ctx, kube); err != nil {
		return fmt.Errorf("%s nodes: %w", c.Name, err)
	}
	return nil
}

func startScheduler(c *Cluster, binDir string) (*component, error) {
	_, kubeconfig, err := componentDir(c, "kube-scheduler")
	if err != nil {
		return nil, err
	}
	return startComponent(c, binDir, "kube-scheduler", []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0", // several clusters share this machine; no serving port to collide on
	}, nil)
}

func startKwok(c *Cluster, binDir string) (*component, error) {
	dir, kubeconfig, err := componentDir(c, "kwok")
	if err != nil {
		return nil, err
	}
	stages, err := kwokStageConfig()
	if err != nil {
		return nil, err
	}
	config := filepath.Join(dir, "stages.yaml")
	if err := os.WriteFile(config, stages, 0o600); err != nil {
		return nil, err
	}
	return startComponent(c, binDir, "kwok", []string{
		"--kubeconfig=" + kubeconfig,
		"--config=" + config,
		"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
		fmt.Sprintf("--node-lease-duration-seconds=%d", nodeLeaseSeconds),
	}, []string{
		// kwok reads $HOME/.kwok/kwok.yaml besides --config; the cluster's own directory has none.
		"HOME=" + dir,
	})
}

// kwokStageConfig is one multi-document kwok configuration holding every embedded Stage.
func kwokStageConfig() ([]byte, error) {
	files, err := kwokStages.ReadDir("kwok")
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for _, f := range files {
		data, err := kwokStages.ReadFile("kwok/" + f.Name())
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(data)
	}
	return out.Bytes(), nil
}

// simulatedNode is the i-th node of a spoke as a kubelet would register it: labelled with its host
// name, zone, OS and architecture, with room for a realistic number of pods, and a pod CIDR of its own
// from which kwok gives out pod IPs. Its address is on the loopback network, so that whatever tries to
// reach its "kubelet" (kubectl logs, exec) fails on this machine rather than sending traffic elsewhere.
func simulatedNode(cluster string, i int) *corev1.Node {
	name := fmt.Sprintf("%s-node-%d", cluster, i+1)
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("16"),
		corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	cidr := fmt.Sprintf("10.244.%d.0/24", i+1)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				corev1.LabelHostname:     name,
				corev1.LabelTopologyZone: fmt.Sprintf("zone-%c", 'a'+i),
				corev1.LabelOSStable:     "linux",
				corev1.LabelArchStable:   "amd64",
			},
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
		},
		Spec: corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr}},
		Status: corev1.NodeStatus{
			Capacity:    resources,
			Allocatable: resources,
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("127.0.1.%d", i+1)},
				{Type: corev1.NodeHostName, Address: name},
			},
		},
	}
}

// waitNodesSchedulable waits until kwok reports every node of c Ready and no taint keeps pods off it
// (kube-controller-manager taints a node not-ready until kwok has initialised it).
func (c *Cluster) waitNodesSchedulable(ctx context.Context, kube kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var pending []string
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := errors.Join(c.scheduler.exitErr(), c.kwok.exitErr()); err != nil {
			return false, err
		}
		nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil // the next round asks again
		}
		pending = pending[:0]
		schedulable := map[string]bool{}
		for i := range nodes.Items {
			schedulable[nodes.Items[i].Name] = isSchedulable(&nodes.Items[i])
		}
		for _, name := range c.Nodes {
			if !schedulable[name] {
				pending = append(pending, name)
			}
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("not Ready and untainted within a minute: %v: %w (kwok log in %s)", pending, err, c.kwok.log)
	}
	return nil
}

func isSchedulable(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return false
		}
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
