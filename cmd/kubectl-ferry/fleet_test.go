package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/internal/statusview"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// kubectl ferry's fleet views on a real hub: ManifestWorks in several cluster namespaces, their status
// written as an agent writes it (no agent or hub runs). `get works` prints a line per work judged as the
// hub judges it, and --drifted, --cluster, --app and --unhealthy keep exactly the works they name;
// `drift` prints the object changed with kubectl edit; the works are listed in pages. A tenant who may
// read only her namespace's AppConfigs gets both views from their status, with notes saying so.
func TestKubectlFerryFleetViews(t *testing.T) {
	env := localcluster.StartForTest(t, localcluster.Options{})
	ctx := t.Context()
	admin, err := kubernetes.NewForConfig(env.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	works, err := workclient.NewForConfig(env.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "team-a"
	for _, name := range []string{"cluster1", "cluster2", "cluster3", ns} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	web := []workv1.ManifestResourceMeta{
		{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: ns, Name: "web"},
		{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: ns, Name: "web-settings"},
	}
	db := []workv1.ManifestResourceMeta{{Group: "apps", Version: "v1", Kind: "StatefulSet", Resource: "statefulsets", Namespace: ns, Name: "db"}}
	changed := time.Now().Add(-45 * time.Minute).Truncate(time.Second)
	edited := workreport.Drift{Count: 2, Managers: []string{"kubectl-edit"}, Fields: []string{".spec.replicas"}, Time: changed}

	// cluster1 has web, whose Deployment someone scaled with kubectl edit twice; cluster2 has web, and
	// db still progressing; cluster3 a work of someone else's whose drift is of its previous generation,
	// and one its agent has not reported yet.
	report(t, works, createWork(t, works, "cluster1", v1alpha2.ManifestWorkName(ns, "web"), ns, "web", web...), web,
		agentReport{drifted: map[int32]workreport.Drift{0: edited}})
	report(t, works, createWork(t, works, "cluster2", v1alpha2.ManifestWorkName(ns, "web"), ns, "web", web...), web, agentReport{})
	report(t, works, createWork(t, works, "cluster2", v1alpha2.ManifestWorkName(ns, "db"), ns, "db", db...), db,
		agentReport{progressing: map[int32]bool{0: true}})
	other := createWork(t, works, "cluster3", "other-tool", "", "", web[1])
	other.Spec.Workload.Manifests[0].Raw = []byte(strings.Replace(string(other.Spec.Workload.Manifests[0].Raw), `"v":"1"`, `"v":"2"`, 1))
	if other, err = works.WorkV1().ManifestWorks("cluster3").Update(ctx, other, metav1.UpdateOptions{}); err != nil || other.Generation != 2 {
		t.Fatalf("update work other-tool: %v (generation %d, want 2)", err, other.Generation)
	}
	report(t, works, other, web[1:], agentReport{drifted: map[int32]workreport.Drift{0: edited}, driftGeneration: 1})
	createWork(t, works, "cluster3", "pending", "", "", web[1])

	all := [][]string{
		{"cluster1", "team-a.web", "team-a/web", "True", "True", "Healthy", "1"},
		{"cluster2", "team-a.db", "team-a/db", "True", "True", "Progressing", "0"},
		{"cluster2", "team-a.web", "team-a/web", "True", "True", "Healthy", "0"},
		{"cluster3", "other-tool", "-", "True", "True", "Healthy", "0"},
		{"cluster3", "pending", "-", "Unknown", "Unknown", "Unknown", "0"},
	}
	kubeconfig, lists := listCountingProxy(t, env.Hub.Config)
	getWorks := func(t *testing.T, args ...string) [][]string {
		t.Helper()
		var out syncBuffer
		if err := kubectlFerry(ctx, kubeconfig, &out, append([]string{"get", "works"}, args...)...); err != nil {
			t.Fatalf("get works %s: %v; it printed:\n%s", strings.Join(args, " "), err, out.String())
		}
		t.Logf("kubectl ferry get works %s:\n%s", strings.Join(args, " "), out.String())
		return withoutLastColumn(lastTable(t, out.String(), "CLUSTER"))
	}
	for _, c := range []struct {
		args []string
		want [][]string
	}{
		{nil, all},
		{[]string{"--drifted"}, all[:1]},
		{[]string{"--cluster", "cluster2"}, all[1:3]},
		{[]string{"--app", "web", "-n", ns}, [][]string{all[0], all[2]}},
		{[]string{"--unhealthy"}, [][]string{all[1], all[4]}},
		{[]string{"--unhealthy", "--cluster", "cluster2"}, all[1:2]},
	} {
		t.Run("get works "+strings.Join(c.args, " "), func(t *testing.T) {
			if got := getWorks(t, c.args...); !slices.EqualFunc(got, c.want, slices.Equal) {
				t.Errorf("lines %q, want %q", got, c.want)
			}
		})
	}

	t.Run("--app is a label selector the API server applies", func(t *testing.T) {
		want := "ferry.io/appconfig-name=web,ferry.io/appconfig-namespace=team-a"
		if !slices.ContainsFunc(lists(), func(q url.Values) bool { return q.Get("labelSelector") == want }) {
			t.Errorf("no list of ManifestWorks asked for labelSelector %q: %v", want, lists())
		}
	})

	t.Run("get works -o json: the data model", func(t *testing.T) {
		var out syncBuffer
		if err := kubectlFerry(ctx, kubeconfig, &out, "get", "works", "--drifted", "-o", "json"); err != nil {
			t.Fatal(err)
		}
		var v statusview.FleetWorks
		if err := json.Unmarshal([]byte(out.String()), &v); err != nil {
			t.Fatalf("%v:\n%s", err, out.String())
		}
		if len(v.Works) != 1 || v.StatusOnly || v.Works[0].Drifted != 1 || v.Works[0].AppConfig != "team-a/web" || v.Works[0].Created == nil {
			t.Errorf("-o json: %s, want the one drifted work of team-a/web with its creation time", out.String())
		}
	})

	t.Run("drift: the Deployment scaled with kubectl edit, not the drift of an earlier generation", func(t *testing.T) {
		for _, args := range [][]string{nil, {"--cluster", "cluster1"}, {"--app", "web", "-n", ns}} {
			var out syncBuffer
			if err := kubectlFerry(ctx, kubeconfig, &out, append([]string{"drift"}, args...)...); err != nil {
				t.Fatal(err)
			}
			t.Logf("kubectl ferry drift %s:\n%s", strings.Join(args, " "), out.String())
			checkDriftLines(t, lastTable(t, out.String(), "CLUSTER"))
		}
		var out syncBuffer
		if err := kubectlFerry(ctx, kubeconfig, &out, "drift", "--cluster", "cluster2"); err != nil || strings.TrimSpace(out.String()) != "No drifted objects found." {
			t.Errorf("drift --cluster cluster2: %v; it printed %q, want that none drifted", err, out.String())
		}
	})

	t.Run("the works are listed in pages", func(t *testing.T) {
		defer func(chunk int64) { listChunk = chunk }(listChunk)
		listChunk = 2
		before := len(lists())
		if got := getWorks(t); !slices.EqualFunc(got, all, slices.Equal) {
			t.Errorf("lines %q, want %q", got, all)
		}
		pages := lists()[before:]
		if len(pages) != 3 {
			t.Fatalf("%d list requests of ManifestWorks for 5 works in pages of 2, want 3: %v", len(pages), pages)
		}
		for i, q := range pages {
			if q.Get("limit") != "2" || (i == 0) != (q.Get("continue") == "") {
				t.Errorf("request %d asked %v, want limit 2 and the continue token of the page before", i, q)
			}
		}
	})

	// alice may read the AppConfigs of team-a and nothing else; their status, as ferry-hub wrote it.
	hubClient, err := client.New(env.Hub.Config, client.Options{Scheme: mustScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	grantAppConfigReader(t, admin, ns, "alice")
	appConfigWithStatus(t, hubClient, ns, "web", v1alpha2.ApplicationConfigurationStatus{
		Summary:   &v1alpha2.Summary{Clusters: 2, Applied: "2/2", Available: "2/2", Healthy: "2/2"},
		Placement: &v1alpha2.PlacementStatus{Clusters: []string{"cluster1", "cluster2"}},
		Drift: &v1alpha2.DriftStatus{Clusters: 1, Objects: 1, Latest: []v1alpha2.DriftedObject{{Cluster: "cluster1", Kind: "Deployment",
			Namespace: ns, Name: "web", Managers: edited.Managers, Fields: edited.Fields, Count: 2, Time: metav1.NewTime(changed)}}},
	})
	appConfigWithStatus(t, hubClient, ns, "db", v1alpha2.ApplicationConfigurationStatus{
		Summary:   &v1alpha2.Summary{Clusters: 1, Applied: "1/1", Available: "1/1", Healthy: "0/1"},
		Placement: &v1alpha2.PlacementStatus{Clusters: []string{"cluster2"}},
		Clusters: []v1alpha2.ClusterStatus{{Name: "cluster2", ManifestWork: "team-a.db", Applied: metav1.ConditionTrue, Available: metav1.ConditionTrue,
			Health: v1alpha2.Progressing, Manifests: []v1alpha2.ManifestStatus{{Kind: "StatefulSet", Namespace: ns, Name: "db",
				Applied: metav1.ConditionTrue, Available: metav1.ConditionTrue, Health: v1alpha2.Progressing}}}},
	})
	asAlice := func(t *testing.T, args ...string) (stdout, stderr string) {
		t.Helper()
		var out, errOut syncBuffer
		cmd := newCommand()
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SetArgs(append([]string{"--kubeconfig", env.Hub.Kubeconfig, "--as", "alice", "-n", ns}, args...))
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Fatalf("%s as alice: %v; it printed:\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
		}
		t.Logf("kubectl ferry %s -n %s, as alice:\n%s\nstderr: %s", strings.Join(args, " "), ns, out.String(), errOut.String())
		return out.String(), errOut.String()
	}

	t.Run("get works as a tenant: from her AppConfigs' status, saying so", func(t *testing.T) {
		text, notice := asAlice(t, "get", "works")
		want := [][]string{
			{"cluster1", "team-a.web", "team-a/web", "True", "True", "Healthy", "1", "-"},
			{"cluster2", "team-a.db", "team-a/db", "True", "True", "Progressing", "0", "-"},
			{"cluster2", "team-a.web", "team-a/web", "True", "True", "Healthy", "0", "-"},
		}
		if got := lastTable(t, text, "CLUSTER"); !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("lines %q, want %q", got, want)
		}
		if !strings.Contains(text, statusview.FleetStatusOnlyNote(ns)) {
			t.Errorf("no note that the view is read from the AppConfigs' status:\n%s", text)
		}
		if notice != "kubectl-ferry: you may not list ManifestWorks cluster-wide: showing what the status of the AppConfigs in namespace team-a says.\n" {
			t.Errorf("stderr %q, want the one line saying why", notice)
		}
		text, _ = asAlice(t, "get", "works", "--unhealthy")
		if got := lastTable(t, text, "CLUSTER"); !slices.EqualFunc(got, want[1:2], slices.Equal) {
			t.Errorf("--unhealthy: lines %q, want %q", got, want[1:2])
		}
		text, notice = asAlice(t, "get", "works", "--app", "web", "--drifted")
		if got := lastTable(t, text, "CLUSTER"); !slices.EqualFunc(got, want[:1], slices.Equal) || !strings.Contains(notice, "AppConfig team-a/web") {
			t.Errorf("--app web --drifted: lines %q (stderr %q), want %q", got, notice, want[:1])
		}
	})

	t.Run("drift as a tenant: the objects her AppConfigs' status names, and their counts", func(t *testing.T) {
		text, notice := asAlice(t, "drift")
		checkDriftLines(t, lastTable(t, text, "CLUSTER"))
		for _, line := range []string{statusview.FleetStatusOnlyNote(ns), "Each status names only its 5 latest drifted objects; all of them:",
			"  team-a/web: 1 objects on 1 clusters, 1 listed"} {
			if !strings.Contains(text, line+"\n") {
				t.Errorf("no line %q in:\n%s", line, text)
			}
		}
		if !strings.Contains(notice, "you may not list ManifestWorks cluster-wide") {
			t.Errorf("stderr %q, want the line saying why", notice)
		}
	})
}

// checkDriftLines fails t unless rows are the one line of the Deployment web on cluster1, scaled with
// kubectl edit twice, last some 45 minutes ago.
func checkDriftLines(t *testing.T, rows [][]string) {
	t.Helper()
	want := [][]string{{"cluster1", "team-a/web", "Deployment", "team-a/web", "kubectl-edit", ".spec.replicas", "2"}}
	if got := withoutLastColumn(rows); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("lines %q, want %q and its age", rows, want)
	}
	if minutes, err := strconv.Atoi(strings.TrimSuffix(rows[0][7], "m")); err != nil || minutes < 45 || minutes > 50 {
		t.Errorf("LAST %q, want some 45 minutes", rows[0][7])
	}
}

// withoutLastColumn is rows without their last cell (an age, which the clock decides).
func withoutLastColumn(rows [][]string) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = r[:len(r)-1]
	}
	return out
}

// createWork creates a ManifestWork in cluster's namespace of an object per meta, labelled as ferry-hub
// labels the work of AppConfig appNamespace/app (none when app is empty).
func createWork(t testing.TB, works workclient.Interface, cluster, name, appNamespace, app string, metas ...workv1.ManifestResourceMeta) *workv1.ManifestWork {
	t.Helper()
	mw := newWork(cluster, name, appNamespace, app, metas...)
	created, err := works.WorkV1().ManifestWorks(cluster).Create(context.Background(), mw, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create work %s/%s: %v", cluster, name, err)
	}
	return created
}

func newWork(cluster, name, appNamespace, app string, metas ...workv1.ManifestResourceMeta) *workv1.ManifestWork {
	mw := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cluster}}
	if app != "" {
		mw.Labels = map[string]string{v1alpha2.LabelAppConfigNamespace: appNamespace, v1alpha2.LabelAppConfigName: app}
	}
	for _, m := range metas {
		apiVersion := m.Version
		if m.Group != "" {
			apiVersion = m.Group + "/" + m.Version
		}
		raw := fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q,"namespace":%q,"labels":{"app.oam.dev/name":%q}},"data":{"v":"1","mode":"on","greeting":"hello from the hub"}}`,
			apiVersion, m.Kind, m.Name, m.Namespace, app)
		mw.Spec.Workload.Manifests = append(mw.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(raw)}})
	}
	return mw
}

// agentReport is what an agent reports of a work: every manifest applied and available for the work's
// generation, and Healthy except those progressing names; Drifted conditions for those drifted names,
// about driftGeneration (default: the work's).
type agentReport struct {
	progressing     map[int32]bool
	drifted         map[int32]workreport.Drift
	driftGeneration int64
}

// status is the status an agent writes of mw, whose manifests are the objects metas, as ferry-agent
// writes it.
func (r agentReport) status(mw *workv1.ManifestWork, metas []workv1.ManifestResourceMeta) workv1.ManifestWorkStatus {
	gen, now := mw.Generation, metav1.Now()
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, ObservedGeneration: gen, LastTransitionTime: now}
	}
	s := workv1.ManifestWorkStatus{Conditions: []metav1.Condition{
		cond(workv1.WorkApplied, metav1.ConditionTrue, "AppliedManifestWorkComplete"),
		cond(workv1.WorkAvailable, metav1.ConditionTrue, "ResourcesAvailable"),
	}}
	for i, m := range metas {
		m.Ordinal = int32(i)
		progressing := cond(workv1.ManifestProgressing, metav1.ConditionFalse, "Current")
		if r.progressing[m.Ordinal] {
			progressing = cond(workv1.ManifestProgressing, metav1.ConditionTrue, "InProgress")
			progressing.Message = "Ready: 0/1"
		}
		mc := workv1.ManifestCondition{ResourceMeta: m, Conditions: []metav1.Condition{
			cond(workv1.ManifestApplied, metav1.ConditionTrue, "AppliedManifestComplete"),
			cond(workv1.ManifestAvailable, metav1.ConditionTrue, "ResourceAvailable"),
			progressing,
			cond(workv1.ManifestDegraded, metav1.ConditionFalse, "Current"),
		}}
		if d, ok := r.drifted[m.Ordinal]; ok {
			c := cond(workreport.ConditionDrifted, metav1.ConditionTrue, workreport.ReasonDriftReverted)
			c.Message = workreport.DriftMessage(d)
			if r.driftGeneration != 0 {
				c.ObservedGeneration = r.driftGeneration
			}
			mc.Conditions = append(mc.Conditions, c)
		}
		s.ResourceStatus.Manifests = append(s.ResourceStatus.Manifests, mc)
	}
	return s
}

// report writes r as mw's status.
func report(t testing.TB, works workclient.Interface, mw *workv1.ManifestWork, metas []workv1.ManifestResourceMeta, r agentReport) {
	t.Helper()
	mw = mw.DeepCopy()
	mw.Status = r.status(mw, metas)
	if _, err := works.WorkV1().ManifestWorks(mw.Namespace).UpdateStatus(context.Background(), mw, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("report on work %s/%s: %v", mw.Namespace, mw.Name, err)
	}
}

// listCountingProxy serves the hub's API as cfg's user on a local address, and writes a kubeconfig for
// it; lists returns the query of every list of ManifestWorks made through it so far.
func listCountingProxy(t *testing.T, cfg *rest.Config) (kubeconfig string, lists func() []url.Values) {
	t.Helper()
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = transport
	var mu sync.Mutex
	var seen []url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/manifestworks") && r.URL.Query().Get("watch") == "" {
			mu.Lock()
			seen = append(seen, r.URL.Query())
			mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: srv.URL}
	kc.AuthInfos["proxied"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "proxied"}
	kc.CurrentContext = "hub"
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, func() []url.Values {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// grantAppConfigReader lets user read the ApplicationConfigurations of namespace, and nothing else.
func grantAppConfigReader(t *testing.T, admin kubernetes.Interface, namespace, user string) {
	t.Helper()
	ctx := t.Context()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "appconfig-reader", Namespace: namespace},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha2.SchemeGroupVersion.Group}, Resources: []string{"applicationconfigurations"},
			Verbs: []string{"get", "list", "watch"}}}}
	if _, err := admin.RbacV1().Roles(namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-appconfig-reader", Namespace: namespace},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	if _, err := admin.RbacV1().RoleBindings(namespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// appConfigWithStatus creates the AppConfig name of namespace and writes status as ferry-hub would.
func appConfigWithStatus(t *testing.T, c client.Client, namespace, name string, status v1alpha2.ApplicationConfigurationStatus) {
	t.Helper()
	app := &v1alpha2.ApplicationConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1alpha2.ApplicationConfigurationSpec{Components: []v1alpha2.ApplicationConfigurationComponent{{ComponentName: name}}}}
	if err := c.Create(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	app.Status = status
	if err := c.Status().Update(t.Context(), app); err != nil {
		t.Fatalf("status of AppConfig %s/%s: %v", namespace, name, err)
	}
}
