package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	workv1alpha1 "open-cluster-management.io/api/work/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/internal/testing/deployrunner"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

const (
	// The hub namespace of the Placement and the ManifestWorkReplicaSet.
	mwrsNamespace = "rollouts"
	mwrsPlacement = "three-clusters"
	mwrsName      = "web"
	// The spoke namespace of the Deployment the ManifestWorkReplicaSet spreads.
	mwrsAppNamespace = "web"
	// Where OCM's cluster manager runs its hub controllers.
	ocmHubNamespace = "open-cluster-management-hub"

	mwrsImageV1 = "registry.example/web:1"
	mwrsImageV2 = "registry.example/web:2"
)

var mwrsClusters = []string{"cluster1", "cluster2", "cluster3"}

// Users who write ManifestWorkReplicaSets keep OCM's hub: OCM's own ManifestWorkReplicaSet controller
// (`work manager` v1.2.0 with the hub gate ManifestWorkReplicaSet, built from the module proxy) spreads
// a Deployment over three spokes running ferry-agent as deploy/ ships it. Its Progressive rollout
// (maxConcurrency 1) reads each cluster's ManifestWork conditions Applied, Progressing and Degraded at
// the work's generation; the works carry no conditionRules, so all it reads is the health Ferry's agent
// reports on its own. The rollout goes one cluster at a time, each after the one before is healthy,
// and completes; a revision that breaks the Deployment (it cannot schedule, and exceeds its progress
// deadline) stops at the first cluster: the other two keep the working revision.
func TestOCMsManifestWorkReplicaSetRollsOutProgressivelyOverFerryAgents(t *testing.T) {
	t.Parallel()               // brings clusters of its own: see doc.go
	ocmWork := ocmWorkAgent(t) // the binary is OCM's `work`: `work agent` on a spoke, `work manager` on the hub
	built := make(chan string, 1)
	go func() { built <- buildBinaries(t, "ferry-agent") }()
	var spokes []localcluster.ClusterSpec
	for _, name := range mwrsClusters {
		// Each spoke's controller manager, scheduler and kwok nodes give the Deployment its real status.
		spokes = append(spokes, localcluster.ClusterSpec{Name: name, ControllerManager: true})
	}
	env := localcluster.StartForTest(t, localcluster.Options{
		// The hub's token controller fills the token Secrets of the agents' hub credentials; its
		// ManifestWorkReplicaSet CRD is OCM's, which Ferry's hub does not serve.
		Hub:    localcluster.ClusterSpec{ControllerManager: true, CRDs: ocmPeerCRDs(t)},
		Spokes: spokes,
	})
	bin := <-built
	if t.Failed() {
		t.FailNow()
	}
	ctx := t.Context()
	logs := logDir(t)
	spokeKube := map[string]kubernetes.Interface{}
	for _, spoke := range env.Spokes {
		startShippedAgent(t, env, spoke, filepath.Join(bin, "ferry-agent"), filepath.Join(logs, "agent-"+spoke.Name+".log"))
		kube, err := kubernetes.NewForConfig(spoke.Config)
		if err != nil {
			t.Fatal(err)
		}
		spokeKube[spoke.Name] = kube
	}
	hubKube, err := kubernetes.NewForConfig(env.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	hubWork, err := workclient.NewForConfig(env.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	hubCluster, err := clusterclient.NewForConfig(env.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{ocmHubNamespace, mwrsNamespace} {
		if _, err := hubKube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// OCM's work hub controller as the cluster manager runs it (manifests/cluster-manager/management/
	// work/deployment.yaml: `/work manager` and the work feature gates), with the hub's admin
	// credential for the cluster manager's; as a process here it elects no leader and serves its
	// health on a free loopback port.
	addrs, err := deployrunner.FreeLoopbackAddresses(1)
	if err != nil {
		t.Fatal(err)
	}
	manager := exec.Command(ocmWork, "manager",
		"--feature-gates=ManifestWorkReplicaSet=true",
		"--kubeconfig="+env.Hub.Kubeconfig,
		"--namespace="+ocmHubNamespace,
		"--disable-leader-election",
		"--listen="+addrs[0])
	manager.Env = []string{"POD_NAME=cluster-manager-work-controller"}
	managerProc := runUntilTestEnds(t, manager, "OCM's work manager", filepath.Join(logs, "ocm-work-manager.log"))
	waitHTTPSReady(t, managerProc, addrs[0], "/healthz")

	// The Placement and the decision OCM's placement controller would make: all three clusters, in one
	// decision group. The test writes both; no placement controller runs.
	createDecidedPlacement(t, hubCluster, mwrsClusters)

	reports := watchReplicaSetWorks(t, hubWork)
	mwrs := &workv1alpha1.ManifestWorkReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: mwrsName, Namespace: mwrsNamespace},
		Spec: workv1alpha1.ManifestWorkReplicaSetSpec{
			ManifestWorkTemplate: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
				{RawExtension: runtime.RawExtension{Object: &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: mwrsAppNamespace}}}},
				{RawExtension: runtime.RawExtension{Object: mwrsDeployment(mwrsImageV1, false)}},
			}}},
			PlacementRefs: []workv1alpha1.LocalPlacementReference{{
				Name: mwrsPlacement,
				RolloutStrategy: clusterv1alpha1.RolloutStrategy{
					Type:        clusterv1alpha1.Progressive,
					Progressive: &clusterv1alpha1.RolloutProgressive{MaxConcurrency: intstr.FromInt32(1)},
				},
			}},
			CascadeDeletionPolicy: workv1alpha1.Background,
		},
	}
	if _, err := hubWork.WorkV1alpha1().ManifestWorkReplicaSets(mwrsNamespace).Create(ctx, mwrs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	eventually(t, "the rollout of "+mwrsImageV1+" completes on all three clusters", 5*time.Minute, func(ctx context.Context) (bool, error) {
		if !managerProc.Running() {
			return false, fmt.Errorf("OCM's work manager exited: %s", managerProc.State())
		}
		for _, c := range mwrsClusters {
			if got := reports.latest(c); got.image != mwrsImageV1 || got.health != "Healthy" {
				return false, nil
			}
		}
		return rolledOut(ctx, hubWork) == nil, nil
	})
	t.Logf("%s reached the clusters in the order %v", mwrsImageV1, reports.order(mwrsImageV1))
	if got := reports.order(mwrsImageV1); !slices.Equal(got, mwrsClusters) {
		t.Errorf("%s reached the clusters in the order %v, want %v (one at a time, by name)", mwrsImageV1, got, mwrsClusters)
	}
	for _, v := range reports.concurrencyViolations(mwrsImageV1) {
		t.Errorf("maxConcurrency 1: %s", v)
	}
	for _, c := range mwrsClusters {
		if err := deploymentServes(ctx, spokeKube[c], mwrsImageV1); err != nil {
			t.Errorf("%s: %v", c, err)
		}
	}
	if err := rolledOut(ctx, hubWork); err != nil {
		t.Errorf("after the rollout: %v", err)
	}

	// A revision whose pods cannot be scheduled: the Deployment exceeds its 5s progress deadline on the
	// first cluster, and Ferry's agent reports the work Degraded.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := hubWork.WorkV1alpha1().ManifestWorkReplicaSets(mwrsNamespace).Get(ctx, mwrsName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got.Spec.ManifestWorkTemplate.Workload.Manifests[1] = workv1.Manifest{RawExtension: runtime.RawExtension{Object: mwrsDeployment(mwrsImageV2, true)}}
		_, err = hubWork.WorkV1alpha1().ManifestWorkReplicaSets(mwrsNamespace).Update(ctx, got, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cluster1 gets "+mwrsImageV2+" and Ferry's agent reports its work Degraded", 3*time.Minute, func(context.Context) (bool, error) {
		got := reports.latest("cluster1")
		return got.image == mwrsImageV2 && got.health == "Degraded", nil
	})
	t.Logf("cluster1's work: %s", reports.latest("cluster1").message)

	// The rollout holds there: for as long as the test watches, the two other clusters keep the
	// working revision, in their works and on the spokes.
	consistently(t, "the rollout halts at cluster1: cluster2 and cluster3 keep "+mwrsImageV1, 30*time.Second, func(ctx context.Context) error {
		if !managerProc.Running() {
			return fmt.Errorf("OCM's work manager exited: %s", managerProc.State())
		}
		for _, c := range mwrsClusters[1:] {
			if got := reports.latest(c); got.image != mwrsImageV1 {
				return fmt.Errorf("%s's work has %s (%s) while cluster1's is Degraded: %s", c, got.image, got.health, reports.latest("cluster1").message)
			}
			if err := deploymentServes(ctx, spokeKube[c], mwrsImageV1); err != nil {
				return fmt.Errorf("%s: %w", c, err)
			}
		}
		return nil
	})
	for _, v := range reports.concurrencyViolations(mwrsImageV2) {
		t.Errorf("maxConcurrency 1: %s", v)
	}
	set, err := hubWork.WorkV1alpha1().ManifestWorkReplicaSets(mwrsNamespace).Get(ctx, mwrsName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(set.Status.Conditions, workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("ManifestWorkReplicaSet %s while halted: %+v; want False", workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut, c)
	}
	if s := set.Status.Summary; s.Total != 1 || s.Degraded != 1 {
		t.Errorf("ManifestWorkReplicaSet summary while halted: %+v; want the one cluster with the new revision, Degraded", s)
	}
}

// ocmPeerCRDs are the CRDs of manifests/ocm/peers: those of OCM's hub controllers that Ferry's hub
// does not serve (hack/vendor-ocm-crds.sh).
func ocmPeerCRDs(t *testing.T) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repoRoot(t), "manifests", "ocm", "peers", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no CRDs in manifests/ocm/peers (%v): run hack/vendor-ocm-crds.sh", err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		crds = append(crds, crd)
	}
	return crds
}

// createDecidedPlacement writes the Placement mwrsPlacement and the PlacementDecision OCM's placement
// controller would write for it: clusters, in decision group 0, labelled as the controller labels
// them (the ManifestWorkReplicaSet controller finds decisions by these labels), and the Placement's
// status counting them.
func createDecidedPlacement(t *testing.T, c clusterclient.Interface, clusters []string) {
	t.Helper()
	ctx := t.Context()
	placements := c.ClusterV1beta1().Placements(mwrsNamespace)
	p, err := placements.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: mwrsPlacement, Namespace: mwrsNamespace}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	decisionName := mwrsPlacement + "-decision-1"
	p.Status = clusterv1beta1.PlacementStatus{
		NumberOfSelectedClusters: int32(len(clusters)),
		DecisionGroups:           []clusterv1beta1.DecisionGroupStatus{{DecisionGroupIndex: 0, Decisions: []string{decisionName}, ClustersCount: int32(len(clusters))}},
		Conditions: []metav1.Condition{{Type: clusterv1beta1.PlacementConditionSatisfied, Status: metav1.ConditionTrue,
			Reason: "AllDecisionsScheduled", Message: "All cluster decisions scheduled", LastTransitionTime: metav1.Now()}},
	}
	if _, err := placements.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	decisions := c.ClusterV1beta1().PlacementDecisions(mwrsNamespace)
	d, err := decisions.Create(ctx, &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{
		Name: decisionName, Namespace: mwrsNamespace,
		Labels: map[string]string{
			clusterv1beta1.PlacementLabel:          mwrsPlacement,
			clusterv1beta1.DecisionGroupIndexLabel: "0",
			clusterv1beta1.DecisionGroupNameLabel:  "",
		},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "cluster.open-cluster-management.io/v1beta1", Kind: "Placement", Name: p.Name, UID: p.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range clusters {
		d.Status.Decisions = append(d.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: name})
	}
	if _, err := decisions.UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// mwrsDeployment is the Deployment the ManifestWorkReplicaSet spreads, running image. A broken one
// selects a node label no node has, so that its new pod stays Pending, and gives up progressing after
// 5s: the Deployment controller then marks it ProgressDeadlineExceeded.
func mwrsDeployment(image string, broken bool) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: mwrsAppNamespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
			},
		},
	}
	if broken {
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](5)
		d.Spec.Template.Spec.NodeSelector = map[string]string{"ferry.test/no-such-node": "true"}
	}
	return d
}

// deploymentServes: the spoke's Deployment runs image, its rollout finished and its one replica ready.
func deploymentServes(ctx context.Context, kube kubernetes.Interface, image string) error {
	d, err := kube.AppsV1().Deployments(mwrsAppNamespace).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if got := d.Spec.Template.Spec.Containers[0].Image; got != image {
		return fmt.Errorf("Deployment web runs %s, want %s", got, image)
	}
	if d.Status.ObservedGeneration != d.Generation || d.Status.UpdatedReplicas != 1 || d.Status.ReadyReplicas != 1 {
		return fmt.Errorf("Deployment web not ready: generation %d observed %d, %d updated, %d ready",
			d.Generation, d.Status.ObservedGeneration, d.Status.UpdatedReplicas, d.Status.ReadyReplicas)
	}
	return nil
}

// rolledOut: OCM's controller says the rollout is complete, every cluster's work applied and available,
// none progressing or degraded.
func rolledOut(ctx context.Context, c workclient.Interface) error {
	set, err := c.WorkV1alpha1().ManifestWorkReplicaSets(mwrsNamespace).Get(ctx, mwrsName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for typ, reason := range map[string]string{
		workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut:  workv1alpha1.ReasonComplete,
		workv1alpha1.ManifestWorkReplicaSetConditionManifestworkApplied: workv1alpha1.ReasonAsExpected,
	} {
		if c := meta.FindStatusCondition(set.Status.Conditions, typ); c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason {
			return fmt.Errorf("condition %s: %+v; want True, %s", typ, c, reason)
		}
	}
	want := workv1alpha1.ManifestWorkReplicaSetSummary{Total: 3, Applied: 3, Available: 3}
	if s := set.Status.Summary; s.Total != want.Total || s.Applied != want.Applied || s.Available != want.Available || s.Progressing != 0 || s.Degraded != 0 {
		return fmt.Errorf("summary %+v; want %+v", s, want)
	}
	return nil
}

// workReport is what a cluster's ManifestWork of the ManifestWorkReplicaSet said at one moment: the
// revision of the template it holds (the Deployment's image) and the health Ferry's agent reported for
// that generation.
type workReport struct {
	cluster string
	image   string
	// health: "" before the agent reported on this generation, else Healthy, Progressing, Degraded or
	// Unknown, from the work's conditions Progressing and Degraded as OCM's rollout reads them.
	health  string
	message string
}

// replicaSetWorks is every state the ManifestWorkReplicaSet's works went through, in the order the
// hub's API server recorded them.
type replicaSetWorks struct {
	mu      sync.Mutex
	history []workReport
}

// watchReplicaSetWorks records, until the test ends, every change of the works the
// ManifestWorkReplicaSet controller writes (found by its label) in any cluster's namespace.
func watchReplicaSetWorks(t *testing.T, c workclient.Interface) *replicaSetWorks {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	selector := workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey + "=" + mwrsNamespace + "." + mwrsName
	list, err := c.WorkV1().ManifestWorks(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return c.WorkV1().ManifestWorks(metav1.NamespaceAll).Watch(ctx, o)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &replicaSetWorks{}
	for i := range list.Items {
		r.record(&list.Items[i])
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if mw, ok := ev.Object.(*workv1.ManifestWork); ok && ev.Type != watch.Deleted {
				r.record(mw)
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		w.Stop()
		<-done
		if t.Failed() {
			t.Logf("the works of the ManifestWorkReplicaSet, change by change:\n%s", r.describe())
		}
	})
	return r
}

func (r *replicaSetWorks) record(mw *workv1.ManifestWork) {
	rep := workReport{cluster: mw.Namespace, image: templateImage(mw)}
	applied := meta.FindStatusCondition(mw.Status.Conditions, workv1.WorkApplied)
	progressing := meta.FindStatusCondition(mw.Status.Conditions, workv1.WorkProgressing)
	degraded := meta.FindStatusCondition(mw.Status.Conditions, workv1.WorkDegraded)
	current := func(c *metav1.Condition) bool { return c != nil && c.ObservedGeneration == mw.Generation }
	if current(applied) && applied.Status == metav1.ConditionTrue && current(progressing) && current(degraded) {
		switch {
		case degraded.Status == metav1.ConditionTrue:
			rep.health, rep.message = "Degraded", degraded.Message
		case progressing.Status == metav1.ConditionTrue:
			rep.health, rep.message = "Progressing", progressing.Message
		case progressing.Status == metav1.ConditionFalse && degraded.Status == metav1.ConditionFalse:
			rep.health, rep.message = "Healthy", progressing.Message
		default:
			rep.health = "Unknown"
		}
		rep.message = fmt.Sprintf("%s (Progressing %s %s, Degraded %s %s)", rep.message, progressing.Status, progressing.Reason, degraded.Status, degraded.Reason)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.history = append(r.history, rep)
}

// templateImage is the image of the Deployment in the work's manifests.
func templateImage(mw *workv1.ManifestWork) string {
	for _, m := range mw.Spec.Workload.Manifests {
		var d appsv1.Deployment
		if err := json.Unmarshal(m.Raw, &d); err == nil && d.Kind == "Deployment" && len(d.Spec.Template.Spec.Containers) > 0 {
			return d.Spec.Template.Spec.Containers[0].Image
		}
	}
	return ""
}

// latest is the cluster's work as last seen.
func (r *replicaSetWorks) latest(cluster string) workReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.history) - 1; i >= 0; i-- {
		if r.history[i].cluster == cluster {
			return r.history[i]
		}
	}
	return workReport{cluster: cluster}
}

// order lists the clusters in the order their works received image.
func (r *replicaSetWorks) order(image string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rep := range r.history {
		if rep.image == image && !slices.Contains(out, rep.cluster) {
			out = append(out, rep.cluster)
		}
	}
	return out
}

// concurrencyViolations are the moments a cluster's work received image while another cluster that
// had received it earlier had not yet been reported Healthy with it: more than one cluster at a time
// rolling out.
func (r *replicaSetWorks) concurrencyViolations(image string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var received, healthy []string
	var out []string
	for _, rep := range r.history {
		if rep.image != image {
			continue
		}
		if !slices.Contains(received, rep.cluster) {
			for _, earlier := range received {
				if !slices.Contains(healthy, earlier) {
					out = append(out, fmt.Sprintf("%s received %s while %s, which received it before, was not yet Healthy", rep.cluster, image, earlier))
				}
			}
			received = append(received, rep.cluster)
		}
		if rep.health == "Healthy" && !slices.Contains(healthy, rep.cluster) {
			healthy = append(healthy, rep.cluster)
		}
	}
	return out
}

func (r *replicaSetWorks) describe() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, rep := range r.history {
		fmt.Fprintf(&b, "  %s %s %s %s\n", rep.cluster, rep.image, rep.health, rep.message)
	}
	return b.String()
}
