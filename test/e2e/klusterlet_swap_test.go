package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/internal/testing/deployrunner"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

// OCMPeersDirEnv names the environment variable that points at the directory holding OCM's own agents
// built as Ferry's test peers (hack/tools/build-ocm-peers.sh); the Makefile sets it. Without it they
// are looked for in bin/ocm-peers/current of this checkout.
const OCMPeersDirEnv = "FERRY_OCM_PEERS_DIR"

// ocmWorkAgent is the path of OCM's work agent binary, the one the klusterlet runs as `/work agent`.
func ocmWorkAgent(t *testing.T) string {
	t.Helper()
	return ocmPeer(t, "work")
}

// ocmHubWorkRole is what OCM's registration grants every managed cluster's agents on the hub, in the
// cluster's namespace (open-cluster-management.io/ocm v1.2.0,
// pkg/registration/hub/manifests/rbac/managedcluster-work-clusterrole.yaml): the credential of the
// klusterlet's hub-kubeconfig-secret, which OCM's work agent and, after the swap, Ferry's run with.
func ocmHubWorkRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "open-cluster-management:managedcluster:work"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
			{APIGroups: []string{workv1.GroupName}, Resources: []string{"manifestworks"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
			{APIGroups: []string{workv1.GroupName}, Resources: []string{"manifestworks/status"}, Verbs: []string{"patch", "update"}},
		},
	}
}

const (
	swapCluster   = "cluster1"
	swapNamespace = "takeover"
	// The klusterlet passes its own UID as --agent-id to its work agent, whichever image that runs.
	swapAgentID = "6a0c1a52-5d4e-4f0e-9d39-klusterlet"
	// The klusterlet's agent namespace, where both agents elect their leader (Lease work-agent-lock).
	klusterletNamespace = "open-cluster-management-agent"
)

// The swap the klusterlet makes when its Klusterlet's spec.workImagePullSpec names Ferry's image: OCM's
// own work agent (v1.2.0, built from the module proxy) applies a cluster's works — a Namespace,
// ConfigMaps under Update, ServerSideApply and CreateOnly, a Deployment with status feedback — with
// the hub credential OCM's registration grants; it stops; ferry-agent starts with the exact arguments
// of the klusterlet's work-agent Deployment (`/work agent …`) and the same credential. Every object
// keeps its UID and its resourceVersion (no write hits an unchanged object), the AppliedManifestWorks
// are kept, no work's Applied or Available leaves True, and the works go on: a change is applied and
// its status feedback reported by Ferry.
func TestKlusterletSwapKeepsWhatOCMsWorkAgentApplied(t *testing.T) {
	t.Parallel() // brings clusters of its own: see doc.go
	ocmBinary := ocmWorkAgent(t)
	built := make(chan string, 1)
	go func() { built <- buildBinaries(t, "ferry-agent") }()
	env := localcluster.StartForTest(t, localcluster.Options{
		// The spoke's controller manager, scheduler and kwok nodes give the Deployment a status to feed back.
		Spokes: []localcluster.ClusterSpec{{Name: swapCluster, ControllerManager: true}},
	})
	ferryBin := <-built
	if t.Failed() {
		t.FailNow()
	}
	ctx := t.Context()
	if err := env.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}
	spoke := env.Spokes[0]
	hubWork, err := workclient.NewForConfig(env.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	spokeWork, err := workclient.NewForConfig(spoke.Config)
	if err != nil {
		t.Fatal(err)
	}
	spokeKube, err := kubernetes.NewForConfig(spoke.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := spokeKube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: klusterletNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The klusterlet's hub-kubeconfig-secret, mounted at /spoke/hub-kubeconfig.
	secretDir := filepath.Join(t.TempDir(), "hub-kubeconfig")
	if err := env.WriteHubKubeconfigDir(ctx, swapCluster, ocmHubWorkRole(), secretDir); err != nil {
		t.Fatal(err)
	}
	hubKubeconfig := filepath.Join(secretDir, "kubeconfig")
	logs := logDir(t)

	// OCM's work agent as the klusterlet runs it; as a process here, it reaches the spoke through
	// --kubeconfig and elects its leader in the klusterlet's namespace, which a pod would know.
	ocmListen, err := deployrunner.FreeLoopbackAddresses(1)
	if err != nil {
		t.Fatal(err)
	}
	ocm := exec.Command(ocmBinary, "agent",
		"--spoke-cluster-name="+swapCluster,
		"--workload-source-driver=kube",
		"--workload-source-config="+hubKubeconfig,
		"--agent-id="+swapAgentID,
		"--terminate-on-files="+hubKubeconfig,
		// Faster than the template's 60s, so that the test need not wait for OCM's status.
		"--status-sync-interval=1s",
		"--kubeconfig="+spoke.Kubeconfig,
		"--namespace="+klusterletNamespace,
		"--listen="+ocmListen[0])
	ocm.Env = []string{"POD_NAME=klusterlet-work-agent-ocm"}
	ocmProc := runUntilTestEnds(t, ocm, "OCM's work agent", filepath.Join(logs, "ocm-work-agent.log"))

	works := []*workv1.ManifestWork{
		swapWork("takeover-config", nil,
			&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: swapNamespace}},
			swapConfigMap("a", "1"), swapConfigMap("b", "1")),
		swapWork("takeover-app", []workv1.ManifestConfigOption{{
			ResourceIdentifier: workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Namespace: swapNamespace, Name: "web"},
			FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}},
		}}, swapDeployment(1)),
		swapWork("takeover-ssa", []workv1.ManifestConfigOption{{
			ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: swapNamespace, Name: "ssa"},
			UpdateStrategy:     &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply, ServerSideApply: &workv1.ServerSideApplyConfig{FieldManager: "work-agent"}},
		}}, swapConfigMap("ssa", "1")),
		swapWork("takeover-createonly", []workv1.ManifestConfigOption{{
			ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: swapNamespace, Name: "once"},
			UpdateStrategy:     &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeCreateOnly},
		}}, swapConfigMap("once", "1")),
	}
	for _, w := range works {
		if _, err := hubWork.WorkV1().ManifestWorks(swapCluster).Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	untilRunning := func(p *ferryProcess) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) {
			if !p.Running() {
				return false, fmt.Errorf("%s exited: %s", p.Name, p.State())
			}
			return false, nil
		}
	}
	waitWorks := func(what string, p *ferryProcess, done func(*workv1.ManifestWork) bool) {
		t.Helper()
		eventually(t, what, 3*time.Minute, func(ctx context.Context) (bool, error) {
			if _, err := untilRunning(p)(ctx); err != nil {
				return false, err
			}
			for _, w := range works {
				got, err := hubWork.WorkV1().ManifestWorks(swapCluster).Get(ctx, w.Name, metav1.GetOptions{})
				if err != nil || !done(got) {
					return false, nil
				}
			}
			return true, nil
		})
	}
	waitWorks("OCM's work agent applies every work and reports it, with the Deployment's feedback", ocmProc, func(w *workv1.ManifestWork) bool {
		return workReported(w) && (w.Name != "takeover-app" || feedbackValue(w, "ReadyReplicas") == 1)
	})

	before := swapSpokeObjects(t, spokeKube)
	amwsBefore := appliedWorks(t, spokeWork)
	if len(amwsBefore) != len(works) {
		t.Fatalf("OCM's work agent left %d AppliedManifestWorks, want %d: %v", len(amwsBefore), len(works), amwsBefore)
	}
	statusBefore := map[string]*workv1.ManifestWork{}
	for _, w := range works {
		got, err := hubWork.WorkV1().ManifestWorks(swapCluster).Get(ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		statusBefore[w.Name] = got
	}
	// From here to the end, a work whose Applied or Available leaves True is a violation: the swap must
	// not show on the hub.
	dips := watchWorkConditions(t, hubWork)

	// ferry-agent as the klusterlet starts its work agent once spec.workImagePullSpec names Ferry's
	// image: `/work agent` (the image links /work to ferry-agent) and the template's arguments, for a
	// Klusterlet in Default mode with one replica (open-cluster-management.io/ocm v1.2.0,
	// manifests/klusterlet/management/klusterlet-work-deployment.yaml). What a process here cannot
	// share with a pod differs: the spoke is reached through --spoke-kubeconfig (the Hosted mode's
	// flag; a pod uses its ServiceAccount), and the servers listen on free loopback ports. As in the
	// Deployment's rolling update (one replica: surge one, none unavailable), the new pod starts while
	// the old one runs, must pass the readiness probe (HTTPS /healthz) while it waits for the Lease
	// OCM's agent holds, and only then is the old one stopped.
	workLink := filepath.Join(t.TempDir(), "work")
	if err := os.Symlink(filepath.Join(ferryBin, "ferry-agent"), workLink); err != nil {
		t.Fatal(err)
	}
	// Its ports are found free now, not when OCM's agent started a minute ago: in between, any process
	// here may have taken one.
	addrs, err := deployrunner.FreeLoopbackAddresses(2)
	if err != nil {
		t.Fatal(err)
	}
	listen, metrics := addrs[0], addrs[1]
	ferry := exec.Command(workLink, "agent",
		"--spoke-cluster-name="+swapCluster,
		"--workload-source-driver=kube",
		"--workload-source-config="+hubKubeconfig,
		"--agent-id="+swapAgentID,
		"--terminate-on-files="+hubKubeconfig,
		"--status-sync-interval=60s",
		"--spoke-kubeconfig="+spoke.Kubeconfig,
		"--listen="+listen,
		"--metrics-bind-address="+metrics)
	ferry.Env = []string{"POD_NAME=klusterlet-work-agent-ferry"}
	ferryProc := runUntilTestEnds(t, ferry, "ferry-agent as /work agent", filepath.Join(logs, "ferry-agent.log"))
	waitHTTPSReady(t, ferryProc, listen, "/healthz")
	eventually(t, "ferry-agent stands by for the Lease OCM's agent holds", time.Minute, func(ctx context.Context) (bool, error) {
		return strings.Contains(ferryProc.LogTail(20), "waiting to lead"), nil
	})
	lease, err := spokeKube.CoordinationV1().Leases(klusterletNamespace).Get(ctx, "work-agent-lock", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if holder := ptr.Deref(lease.Spec.HolderIdentity, ""); strings.HasPrefix(holder, "klusterlet-work-agent-ferry") {
		t.Fatalf("ferry-agent holds the Lease %s while OCM's agent runs", holder)
	}
	if n, err := manifestOutcomes(ctx, metrics); err != nil || len(n) != 0 {
		t.Fatalf("ferry-agent standing by: applies %v (%v); want its metrics served and no manifest applied", n, err)
	}
	// The rollout stops the old pod: OCM's agent releases its Lease on SIGTERM.
	if err := ocmProc.Stop(stopGrace); err != nil {
		t.Fatal(err)
	}

	// Ferry's first pass over every manifest of every work, counted by its own metric, wrote nothing.
	manifests := 0
	for _, w := range works {
		manifests += len(w.Spec.Workload.Manifests)
	}
	var outcomes map[string]float64
	eventually(t, "ferry-agent processes every manifest once", 2*time.Minute, func(ctx context.Context) (bool, error) {
		if _, err := untilRunning(ferryProc)(ctx); err != nil {
			return false, err
		}
		outcomes, _ = manifestOutcomes(ctx, metrics)
		total := 0.0
		for _, n := range outcomes {
			total += n
		}
		return total >= float64(manifests), nil
	})
	t.Logf("ferry-agent's first pass over the %d manifests OCM's agent applied, by outcome: %v", manifests, outcomes)
	for outcome, n := range outcomes {
		if outcome != "unchanged" && n > 0 {
			t.Errorf("ferry-agent's first pass: %v manifests %s; want every one unchanged", n, outcome)
		}
	}
	// And the AppliedManifestWorks are Ferry's now: a label put on each work on the hub reaches its
	// AppliedManifestWork, which only the running agent copies.
	for _, w := range works {
		patch := []byte(`{"metadata":{"labels":{"swap.ferry.io/check":"1"}}}`)
		if _, err := hubWork.WorkV1().ManifestWorks(swapCluster).Patch(ctx, w.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "ferry-agent copies each work's new label to its AppliedManifestWork", 2*time.Minute, func(ctx context.Context) (bool, error) {
		if _, err := untilRunning(ferryProc)(ctx); err != nil {
			return false, err
		}
		labelled := 0
		for _, amw := range appliedWorks(t, spokeWork) {
			if amw.Labels["swap.ferry.io/check"] == "1" {
				labelled++
			}
		}
		return labelled == len(works), nil
	})

	after := swapSpokeObjects(t, spokeKube)
	for key, b := range before {
		a, ok := after[key]
		switch {
		case !ok:
			t.Errorf("%s is gone after the swap", key)
		case a.uid != b.uid:
			t.Errorf("%s was re-created by the swap: uid %s, was %s", key, a.uid, b.uid)
		case a.resourceVersion != b.resourceVersion:
			t.Errorf("%s was written by the swap though its manifest did not change: resourceVersion %s, was %s", key, a.resourceVersion, b.resourceVersion)
		}
	}
	for name, b := range amwsBefore {
		a, ok := appliedWorks(t, spokeWork)[name]
		if !ok || a.UID != b.UID || a.Spec.AgentID != swapAgentID {
			t.Errorf("AppliedManifestWork %s after the swap: %+v; want uid %s, agentID %s kept", name, a, b.UID, swapAgentID)
		}
	}
	for _, w := range works {
		got, err := hubWork.WorkV1().ManifestWorks(swapCluster).Get(ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
			was, now := meta.FindStatusCondition(statusBefore[w.Name].Status.Conditions, typ), meta.FindStatusCondition(got.Status.Conditions, typ)
			if now == nil || now.Status != metav1.ConditionTrue || !now.LastTransitionTime.Equal(&was.LastTransitionTime) {
				t.Errorf("work %s %s after the swap: %+v; want True since %s, as OCM's agent left it", w.Name, typ, now, was.LastTransitionTime)
			}
		}
	}

	// The works go on under Ferry: a changed value and a scaled Deployment are applied, and the
	// Deployment's feedback follows.
	update := func(name string, change func(*workv1.ManifestWork)) {
		t.Helper()
		w, err := hubWork.WorkV1().ManifestWorks(swapCluster).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		change(w)
		if _, err := hubWork.WorkV1().ManifestWorks(swapCluster).Update(ctx, w, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	update("takeover-config", func(w *workv1.ManifestWork) {
		w.Spec.Workload.Manifests[1] = workv1.Manifest{RawExtension: runtime.RawExtension{Object: swapConfigMap("a", "2")}}
	})
	update("takeover-app", func(w *workv1.ManifestWork) {
		w.Spec.Workload.Manifests[0] = workv1.Manifest{RawExtension: runtime.RawExtension{Object: swapDeployment(2)}}
	})
	waitWorks("ferry-agent applies the changes and reports them, the Deployment's feedback at 2 ready replicas", ferryProc, func(w *workv1.ManifestWork) bool {
		return workReported(w) && (w.Name != "takeover-app" || feedbackValue(w, "ReadyReplicas") == 2)
	})
	cm, err := spokeKube.CoreV1().ConfigMaps(swapNamespace).Get(ctx, "a", metav1.GetOptions{})
	if err != nil || cm.Data["k"] != "2" {
		t.Errorf("configmap a after its change: %v %v; want k=2", cm.Data, err)
	}
	final := swapSpokeObjects(t, spokeKube)
	for key, b := range before {
		if key == "configmap/a" || key == "deployment/web" {
			continue
		}
		if a := final[key]; a.resourceVersion != b.resourceVersion {
			t.Errorf("%s was written though only other manifests changed: resourceVersion %s, was %s", key, a.resourceVersion, b.resourceVersion)
		}
	}
	for _, d := range dips() {
		t.Errorf("during the swap: %s", d)
	}
}

func swapWork(name string, configs []workv1.ManifestConfigOption, objs ...runtime.Object) *workv1.ManifestWork {
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: swapCluster}}
	for _, o := range objs {
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Object: o}})
	}
	w.Spec.ManifestConfigs = configs
	return w
}

func swapConfigMap(name, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: swapNamespace},
		Data:       map[string]string{"k": value},
	}
}

func swapDeployment(replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: swapNamespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1"}}},
			},
		},
	}
}

// workReported: the work's Applied and Available are True for its current generation, and so are
// every manifest's.
func workReported(w *workv1.ManifestWork) bool {
	for _, typ := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
		c := meta.FindStatusCondition(w.Status.Conditions, typ)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != w.Generation {
			return false
		}
	}
	if len(w.Status.ResourceStatus.Manifests) != len(w.Spec.Workload.Manifests) {
		return false
	}
	for _, m := range w.Status.ResourceStatus.Manifests {
		if !meta.IsStatusConditionTrue(m.Conditions, workv1.ManifestApplied) || !meta.IsStatusConditionTrue(m.Conditions, workv1.ManifestAvailable) {
			return false
		}
	}
	return true
}

// feedbackValue is the integer status feedback value name of the work's first manifest, or -1.
func feedbackValue(w *workv1.ManifestWork, name string) int64 {
	if len(w.Status.ResourceStatus.Manifests) == 0 {
		return -1
	}
	m := w.Status.ResourceStatus.Manifests[0]
	if !meta.IsStatusConditionTrue(m.Conditions, "StatusFeedbackSynced") {
		return -1
	}
	for _, v := range m.StatusFeedbacks.Values {
		if v.Name == name && v.Value.Integer != nil {
			return *v.Value.Integer
		}
	}
	return -1
}

type objectVersion struct {
	uid             types.UID
	resourceVersion string
}

// swapSpokeObjects are the UID and resourceVersion of every object the works apply, by kind/name.
func swapSpokeObjects(t *testing.T, kube kubernetes.Interface) map[string]objectVersion {
	t.Helper()
	ctx := t.Context()
	out := map[string]objectVersion{}
	ns, err := kube.CoreV1().Namespaces().Get(ctx, swapNamespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out["namespace/"+swapNamespace] = objectVersion{ns.UID, ns.ResourceVersion}
	for _, name := range []string{"a", "b", "ssa", "once"} {
		cm, err := kube.CoreV1().ConfigMaps(swapNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out["configmap/"+name] = objectVersion{cm.UID, cm.ResourceVersion}
	}
	d, err := kube.AppsV1().Deployments(swapNamespace).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A Deployment's status is written by its controller; its metadata.generation counts the writes of
	// its spec, which is what an agent writes.
	out["deployment/web"] = objectVersion{d.UID, fmt.Sprint(d.Generation) + "/" + strings.Join(annotationKeys(d.Annotations), ",")}
	return out
}

func annotationKeys(m map[string]string) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func appliedWorks(t *testing.T, c workclient.Interface) map[string]workv1.AppliedManifestWork {
	t.Helper()
	list, err := c.WorkV1().AppliedManifestWorks().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]workv1.AppliedManifestWork{}
	for _, amw := range list.Items {
		out[amw.Name] = amw
	}
	return out
}

// watchWorkConditions watches the cluster's works on the hub until the test ends and returns a
// function listing every moment a work's Applied or Available was not True.
func watchWorkConditions(t *testing.T, c workclient.Interface) func() []string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	w, err := c.WorkV1().ManifestWorks(swapCluster).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var dips []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			mw, ok := ev.Object.(*workv1.ManifestWork)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			for _, typ := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
				if c := meta.FindStatusCondition(mw.Status.Conditions, typ); c == nil || c.Status != metav1.ConditionTrue {
					mu.Lock()
					dips = append(dips, fmt.Sprintf("work %s %s: %+v", mw.Name, typ, c))
					mu.Unlock()
				}
			}
		}
	}()
	return func() []string {
		cancel()
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return dips
	}
}

// manifestOutcomes reads ferry-agent's metric ferry_agent_manifest_applies_total at addr and sums it
// by outcome (applied, unchanged, conflict, ...).
func manifestOutcomes(ctx context.Context, addr string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", req.URL, resp.Status)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		// ferry_agent_manifest_applies_total{outcome="unchanged",strategy="Update"} 4
		rest, ok := strings.CutPrefix(line, "ferry_agent_manifest_applies_total{")
		if !ok {
			continue
		}
		labels, value, _ := strings.Cut(rest, "} ")
		_, outcome, _ := strings.Cut(labels, `outcome="`)
		outcome, _, _ = strings.Cut(outcome, `"`)
		n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return nil, fmt.Errorf("metric line %q: %w", line, err)
		}
		out[outcome] += n
	}
	return out, nil
}

// waitHTTPSReady polls https://<addr><path> as the klusterlet's readiness probe does (HTTPS, the
// serving certificate not verified, as the kubelet does not) until it answers 200.
func waitHTTPSReady(t *testing.T, p *ferryProcess, addr, path string) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // as the kubelet's probes
	eventually(t, p.Name+" ready over HTTPS at "+addr+path, readyTimeout, func(ctx context.Context) (bool, error) {
		if !p.Running() {
			return false, fmt.Errorf("exited (%s):\n%s", p.State(), p.LogTail(20))
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+path, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}
