package localcluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// testWorkloads checks that workloads on a spoke with kube-controller-manager reach the status they
// would reach on a real cluster: the scheduler places their pods on the spoke's nodes, kwok runs them.
func testWorkloads(t *testing.T, spoke *Cluster) {
	if len(spoke.Nodes) != spokeNodes {
		t.Fatalf("%s has nodes %v, want %d", spoke.Name, spoke.Nodes, spokeNodes)
	}
	// The subtests poll in parallel; the client's default rate limit (5 per second) would pace them.
	cfg := rest.CopyConfig(spoke.Config)
	cfg.QPS, cfg.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a Deployment of 2 replicas becomes 2/2 ready", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, cs, "deployment")
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: podTemplate(map[string]string{"app": "web"}),
			},
		}
		if _, err := cs.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var last appsv1.DeploymentStatus
		err := poll(t.Context(), time.Minute, func(ctx context.Context) (bool, error) {
			got, err := cs.AppsV1().Deployments(ns).Get(ctx, d.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			last = got.Status
			return last.ObservedGeneration == got.Generation && last.ReadyReplicas == 2 &&
				last.AvailableReplicas == 2 && last.UpdatedReplicas == 2, nil
		})
		if err != nil {
			t.Fatalf("Deployment status %+v: %v", last, err)
		}
		expectRunningOnNodes(t, cs, spoke, ns, "app=web", 2)
	})

	t.Run("a StatefulSet of 2 replicas becomes 2/2 ready", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, cs, "statefulset")
		s := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
			Spec: appsv1.StatefulSetSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
				Template: podTemplate(map[string]string{"app": "db"}),
			},
		}
		if _, err := cs.AppsV1().StatefulSets(ns).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var last appsv1.StatefulSetStatus
		err := poll(t.Context(), time.Minute, func(ctx context.Context) (bool, error) {
			got, err := cs.AppsV1().StatefulSets(ns).Get(ctx, s.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			last = got.Status
			return last.ObservedGeneration == got.Generation && last.ReadyReplicas == 2 && last.AvailableReplicas == 2, nil
		})
		if err != nil {
			t.Fatalf("StatefulSet status %+v: %v", last, err)
		}
	})

	t.Run("a DaemonSet has one ready pod on each node", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, cs, "daemonset")
		ds := &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
				Template: podTemplate(map[string]string{"app": "agent"}),
			},
		}
		if _, err := cs.AppsV1().DaemonSets(ns).Create(t.Context(), ds, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var last appsv1.DaemonSetStatus
		n := int32(len(spoke.Nodes))
		err := poll(t.Context(), time.Minute, func(ctx context.Context) (bool, error) {
			got, err := cs.AppsV1().DaemonSets(ns).Get(ctx, ds.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			last = got.Status
			return last.ObservedGeneration == got.Generation && last.DesiredNumberScheduled == n &&
				last.NumberReady == n && last.NumberAvailable == n, nil
		})
		if err != nil {
			t.Fatalf("DaemonSet status %+v, want %d ready: %v", last, n, err)
		}
		onNodes := expectRunningOnNodes(t, cs, spoke, ns, "app=agent", len(spoke.Nodes))
		slices.Sort(onNodes)
		if !slices.Equal(onNodes, spoke.Nodes) {
			t.Errorf("DaemonSet pods run on %v, want one on each of %v", onNodes, spoke.Nodes)
		}
	})

	t.Run("a Job completes", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, cs, "job")
		job := newJob(ns, "once", nil)
		if _, err := cs.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if status, err := waitJobCondition(t.Context(), cs, ns, job.Name, batchv1.JobComplete); err != nil {
			t.Fatalf("Job status %+v: %v", status, err)
		} else if status.Succeeded != 1 || status.Failed != 0 {
			t.Errorf("Job complete with %d succeeded and %d failed pods, want 1 and 0", status.Succeeded, status.Failed)
		}
	})

	t.Run("a Job whose pod kwok fails fails", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, cs, "failing-job")
		job := newJob(ns, "doomed", map[string]string{"pod-container-running-failed.stage.kwok.x-k8s.io": "true"})
		if _, err := cs.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if status, err := waitJobCondition(t.Context(), cs, ns, job.Name, batchv1.JobFailed); err != nil {
			t.Fatalf("Job status %+v: %v", status, err)
		} else if status.Failed != 1 || status.Succeeded != 0 {
			t.Errorf("Job failed with %d failed and %d succeeded pods, want 1 and 0", status.Failed, status.Succeeded)
		}
	})

	t.Run("a pod goes to the node its nodeSelector matches; with one no node matches it stays Pending", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, cs, "node-selector")
		placed := newPod(ns, "placed", map[string]string{corev1.LabelTopologyZone: "zone-b"})
		stranded := newPod(ns, "stranded", map[string]string{corev1.LabelTopologyZone: "nowhere"})
		for _, p := range []*corev1.Pod{placed, stranded} {
			if _, err := cs.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// The pod the scheduler can place shows it is running and honours selectors.
		expectRunningOnNodes(t, cs, spoke, ns, "pod=placed", 1)
		got, err := cs.CoreV1().Pods(ns).Get(t.Context(), placed.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := spoke.Nodes[1]; got.Spec.NodeName != want {
			t.Errorf("pod selecting zone-b runs on %q, want %s", got.Spec.NodeName, want)
		}

		// The scheduler has looked at the stranded pod and found no node for it...
		err = poll(t.Context(), time.Minute, func(ctx context.Context) (bool, error) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, stranded.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			c := podCondition(p, corev1.PodScheduled)
			return c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable, nil
		})
		if err != nil {
			t.Fatalf("the scheduler did not report the pod Unschedulable: %v", err)
		}
		// ...and it stays unscheduled and Pending throughout an observation window.
		window, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		var observed int
		var moved string
		_ = poll(window, time.Minute, func(ctx context.Context) (bool, error) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, stranded.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil // no sign of the pod moving (the window may be closing); look again
			}
			observed++
			if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending {
				moved = fmt.Sprintf("on node %q, phase %s", p.Spec.NodeName, p.Status.Phase)
				return true, nil
			}
			return false, nil
		})
		if moved != "" || observed == 0 {
			t.Fatalf("a pod with an unmatched nodeSelector, seen %d times in 5s: want always Pending on no node, got %s", observed, moved)
		}
	})
}

// newNamespace creates a namespace for one test and waits for its default ServiceAccount, without
// which the API server admits no pod there.
func newNamespace(t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "workloads-" + name}}
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := poll(t.Context(), time.Minute, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, ignoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("default ServiceAccount in %s: %v", ns.Name, err)
	}
	return ns.Name
}

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example/app:1"}}},
	}
}

func newPod(ns, name string, nodeSelector map[string]string) *corev1.Pod {
	tmpl := podTemplate(map[string]string{"pod": name})
	tmpl.Spec.NodeSelector = nodeSelector
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: tmpl.Labels}, Spec: tmpl.Spec}
}

func newJob(ns, name string, podLabels map[string]string) *batchv1.Job {
	tmpl := podTemplate(podLabels)
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: tmpl},
	}
}

func waitJobCondition(ctx context.Context, cs kubernetes.Interface, ns, name string, want batchv1.JobConditionType) (batchv1.JobStatus, error) {
	var last batchv1.JobStatus
	err := poll(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		got, err := cs.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = got.Status
		for _, c := range last.Conditions {
			if c.Type == want && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	return last, err
}

// expectRunningOnNodes waits until want pods selected by selector in ns are Running and Ready, and
// returns the nodes they run on, each one of the spoke's.
func expectRunningOnNodes(t *testing.T, cs kubernetes.Interface, spoke *Cluster, ns, selector string, want int) []string {
	t.Helper()
	var nodes []string
	var last []string
	err := poll(t.Context(), time.Minute, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		nodes, last = nil, nil
		for i := range pods.Items {
			p := &pods.Items[i]
			ready := podCondition(p, corev1.PodReady)
			last = append(last, fmt.Sprintf("%s on %q: %s, ready %v", p.Name, p.Spec.NodeName, p.Status.Phase, ready != nil && ready.Status == corev1.ConditionTrue))
			if p.Status.Phase == corev1.PodRunning && ready != nil && ready.Status == corev1.ConditionTrue && p.Status.PodIP != "" {
				nodes = append(nodes, p.Spec.NodeName)
			}
		}
		return len(nodes) == want, nil
	})
	if err != nil {
		t.Fatalf("want %d Running and Ready pods in %s, have %v: %v", want, ns, last, err)
	}
	for _, n := range nodes {
		if !slices.Contains(spoke.Nodes, n) {
			t.Errorf("a pod runs on %q, not one of the spoke's nodes %v", n, spoke.Nodes)
		}
	}
	return nodes
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
