package localcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// RunPodsOnFakeNode stands in for a scheduler and a kubelet in namespace, which local clusters do not
// have: until ctx is done, it binds every pending pod there to a Node it registers, and reports it
// Running and Ready. Workload controllers of kube-controller-manager then count the pods as they would
// on a real node, so that a Deployment's readyReplicas and availableReplicas become real.
func (c *Cluster) RunPodsOnFakeNode(ctx context.Context, namespace string) error {
	kube, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	const node = "ferry-fake-node"
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), Reason: "FakeKubeletReady",
		}}},
	}
	if _, err := kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("register node %s: %w", node, err)
	}
	go func() {
		_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			pods, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for i := range pods.Items {
				p := &pods.Items[i]
				if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodRunning {
					continue
				}
				if p.Spec.NodeName == "" {
					binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
					if err := kube.CoreV1().Pods(namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
						continue
					}
				}
				now := metav1.Now()
				p.Status.Phase = corev1.PodRunning
				p.Status.StartTime = &now
				p.Status.Conditions = []corev1.PodCondition{
					{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
					{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
					{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
					{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				}
				// Only the status changes; a failed write (the pod moved on) is retried next round.
				if fresh, err := kube.CoreV1().Pods(namespace).Get(ctx, p.Name, metav1.GetOptions{}); err == nil {
					fresh.Status = p.Status
					_, _ = kube.CoreV1().Pods(namespace).UpdateStatus(ctx, fresh, metav1.UpdateOptions{})
				}
			}
			return false, nil
		})
	}()
	return nil
}
