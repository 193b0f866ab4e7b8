package agent_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/agent"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// reportOnlyWork is a report-only work of manifests: annotated ferry.io/report-diff, and each manifest
// ReadOnly when readOnly, as the hub writes them (so that OCM's agent writes nothing either).
func (f *agentFixture) reportOnlyWork(name string, readOnly bool, manifests ...string) *workv1.ManifestWork {
	f.t.Helper()
	w := f.work(name, manifests...)
	w.Annotations = map[string]string{workreport.AnnotationReportDiff: "true"}
	if readOnly {
		for _, m := range []workv1.ResourceIdentifier{
			{Group: "apps", Resource: "deployments", Namespace: f.cluster, Name: "*"},
			{Resource: "configmaps", Namespace: f.cluster, Name: "*"},
			{Resource: "secrets", Namespace: f.cluster, Name: "*"},
		} {
			w.Spec.ManifestConfigs = append(w.Spec.ManifestConfigs, workv1.ManifestConfigOption{ResourceIdentifier: m,
				UpdateStrategy: &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly}})
		}
	}
	return w
}

// spokeNamespace creates the test's namespace on the spoke, for objects made there by hand.
func (f *agentFixture) spokeNamespace() {
	f.t.Helper()
	if _, err := f.kube.CoreV1().Namespaces().Create(f.t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.cluster}}, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// createConfigMap creates ConfigMap name on the spoke by hand, with data k: value.
func (f *agentFixture) createConfigMap(name, value string) *corev1.ConfigMap {
	f.t.Helper()
	cm, err := f.kube.CoreV1().ConfigMaps(f.cluster).Create(f.t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.cluster}, Data: map[string]string{"k": value}}, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return cm
}

// wouldChange reads manifest ordinal's WouldChange condition about the work's generation.
func wouldChange(w *workv1.ManifestWork, ordinal int32) (workreport.Diff, *metav1.Condition, bool) {
	c := manifestCondition(w, ordinal, workreport.ConditionWouldChange)
	if c == nil || c.ObservedGeneration != w.Generation {
		return workreport.Diff{}, c, false
	}
	d, ok := workreport.ReadDiff(c)
	return d, c, ok
}

// fieldOf returns the change at path in d.
func fieldOf(d workreport.Diff, path string) (workreport.FieldChange, bool) {
	i := slices.IndexFunc(d.Fields, func(f workreport.FieldChange) bool { return f.Path == path })
	if i < 0 {
		return workreport.FieldChange{}, false
	}
	return d.Fields[i], true
}

// workWouldChange is the work's own WouldChange condition about its generation, or nil.
func workWouldChange(w *workv1.ManifestWork) *metav1.Condition {
	c := meta.FindStatusCondition(w.Status.Conditions, workreport.ConditionWouldChange)
	if c == nil || c.ObservedGeneration != w.Generation {
		return nil
	}
	return c
}

// appliedResources lists what the spoke's AppliedManifestWork of work says it applied.
func (f *agentFixture) appliedResources(work string) []workv1.AppliedManifestResourceMeta {
	f.t.Helper()
	amw, err := f.spokeWk.WorkV1().AppliedManifestWorks().Get(f.t.Context(), agent.HubHash(f.cfg.Hub.Host)+"-"+work, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return amw.Status.AppliedResources
}

const (
	deploymentAtA = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: "{{ns}}", labels: {app: web, tier: front}}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.25"}]
`
	configMapPreview = `{apiVersion: v1, kind: ConfigMap, metadata: {name: preview, namespace: "{{ns}}"}, data: {k: "1"}}`
)

// A Deployment delivered at image A by a work; a second, report-only work carries it at image B, without
// the label the first set, and a ConfigMap the spoke does not have. The report says what applying it
// would change — the image A → B, the label removed, the ConfigMap created — and writes nothing: the
// Deployment is untouched, the ConfigMap not created, nothing owned. The report follows the spoke (the
// ConfigMap made by hand, then edited to match) and the work's new generations; deleting the work
// deletes nothing.
func TestReportOnlyWorkSaysWhatItWouldChangeAndWritesNothing(t *testing.T) {
	f := startAgent(t, withResync(time.Hour))
	f.create(f.work("report-delivered", namespaceManifest, deploymentAtA))
	// Settled (its pods running): the Deployment's status, and so its resourceVersion, stays as it is.
	f.waitWork("report-delivered", "healthy", allHealthy)
	before, err := f.kube.AppsV1().Deployments(f.cluster).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	atB := strings.Replace(strings.Replace(deploymentAtA, "nginx:1.25", "nginx:1.26", 1), ", tier: front}", "}", 1)
	preview := f.create(f.reportOnlyWork("report-preview", true, atB, configMapPreview))
	var last string
	w := f.waitWork(preview.Name, "the report", func(w *workv1.ManifestWork) bool {
		if c := workWouldChange(w); c != nil {
			last = c.Message
		}
		_, _, ok0 := wouldChange(w, 0)
		_, _, ok1 := wouldChange(w, 1)
		return ok0 && ok1 && workWouldChange(w) != nil
	})
	d, c, _ := wouldChange(w, 0)
	if c.Status != metav1.ConditionTrue || c.Reason != workreport.ReasonDiffersFromLive {
		t.Errorf("the Deployment's WouldChange is %s/%s %q; want True/%s", c.Status, c.Reason, c.Message, workreport.ReasonDiffersFromLive)
	}
	if got, ok := fieldOf(d, ".spec.template.spec.containers[0].image"); !ok || got.Live != `"nginx:1.25"` || got.Want != `"nginx:1.26"` {
		t.Errorf("the Deployment's WouldChange %q does not name the image \"nginx:1.25\" → \"nginx:1.26\"", c.Message)
	}
	if got, ok := fieldOf(d, ".metadata.labels.tier"); !ok || got.Live != `"front"` || got.Want != "null" {
		t.Errorf("the Deployment's WouldChange %q does not name the label tier \"front\" → null (removed as last applied)", c.Message)
	}
	if len(d.Fields) != 2 || d.MoreFields != 0 {
		t.Errorf("the Deployment's WouldChange %q names %d fields and %d more; want exactly the image and the label", c.Message, len(d.Fields), d.MoreFields)
	}
	if d, c, _ := wouldChange(w, 1); !d.Create || c.Reason != workreport.ReasonWouldCreate {
		t.Errorf("the missing ConfigMap's WouldChange is %+v; want True/WouldCreate", c)
	}
	if c := workWouldChange(w); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "would change 2 of its 2 objects") {
		t.Errorf("the work's WouldChange is %s %q; want True, 2 of its 2 objects", c.Status, last)
	}

	after, err := f.kube.AppsV1().Deployments(f.cluster).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("the Deployment was written: resourceVersion %s, was %s", after.ResourceVersion, before.ResourceVersion)
	}
	if f.configMapExists("preview") {
		t.Error("the report-only work created its ConfigMap")
	}
	if applied := f.appliedResources(preview.Name); len(applied) != 0 {
		t.Errorf("the report-only work's AppliedManifestWork lists %+v; want nothing", applied)
	}

	// The ConfigMap made by hand, then edited to match: the report follows the spoke, without a resync.
	f.createConfigMap("preview", "by-hand")
	w = f.waitWork(preview.Name, "the ConfigMap made by hand reported", func(w *workv1.ManifestWork) bool {
		d, _, ok := wouldChange(w, 1)
		got, found := fieldOf(d, ".data.k")
		return ok && found && got.Live == `"by-hand"` && got.Want == `"1"`
	})
	f.editConfigMap("preview", "1")
	w = f.waitWork(preview.Name, "the edited ConfigMap reported matching", func(w *workv1.ManifestWork) bool {
		_, c, ok := wouldChange(w, 1)
		return ok && c.Status == metav1.ConditionFalse && c.Reason == workreport.ReasonMatchesLive
	})
	if c := workWouldChange(w); c == nil || !strings.Contains(c.Message, "would change 1 of its 2 objects") {
		t.Errorf("the work's WouldChange is %+v; want 1 of its 2 objects", c)
	}

	// A new generation is compared afresh.
	f.update(preview.Name, func(w *workv1.ManifestWork) {
		w.Spec.Workload.Manifests = f.work("", strings.Replace(atB, "nginx:1.26", "nginx:1.27", 1), configMapPreview).Spec.Workload.Manifests
	})
	f.waitWork(preview.Name, "the new generation reported", func(w *workv1.ManifestWork) bool {
		d, _, ok := wouldChange(w, 0)
		got, found := fieldOf(d, ".spec.template.spec.containers[0].image")
		return ok && found && got.Want == `"nginx:1.27"`
	})

	live, err := f.kube.AppsV1().Deployments(f.cluster).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range live.OwnerReferences {
		if strings.HasSuffix(ref.Name, "-"+preview.Name) {
			t.Errorf("the Deployment is owned by the report-only work: %+v", ref)
		}
	}
	f.deleteWork(preview.Name)
	f.waitWorkGone(preview.Name)
	f.eventually("the report-only work's AppliedManifestWork gone", func(ctx context.Context) (bool, error) {
		_, err := f.spokeWk.WorkV1().AppliedManifestWorks().Get(ctx, agent.HubHash(f.cfg.Hub.Host)+"-"+preview.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	kept, err := f.kube.AppsV1().Deployments(f.cluster).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil || kept.UID != before.UID || kept.Spec.Template.Spec.Containers[0].Image != "nginx:1.25" {
		t.Errorf("after the report-only work was deleted the Deployment is %v (error %v); want it kept at nginx:1.25", kept, err)
	}
	if !f.configMapExists("preview") {
		t.Error("deleting the report-only work deleted the ConfigMap made by hand")
	}
}

// A work annotated report-only is only read even where its manifests say Update (here by default): the
// missing ConfigMap is not created, the one made by hand not changed nor owned. A manifest that fails
// says why and has no WouldChange. Without the annotation, the same work applies (the annotation alone
// changes, not the generation) and reports no WouldChange.
func TestReportOnlyWorkWritesNothingWhateverItsStrategy(t *testing.T) {
	f := startAgent(t, withResync(time.Hour))
	f.spokeNamespace()
	made := f.createConfigMap("b", "by-hand")
	widget := `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: "{{ns}}"}}`
	applies := func(strategy string) float64 {
		return gatherMetrics(t).value("ferry_agent_manifest_applies_total", "strategy", strategy)
	}
	updates, reads := applies("Update"), applies("ReadOnly")
	w := f.create(f.reportOnlyWork("report-update", false, configMapA, configMapB, widget))
	w = f.waitWork(w.Name, "the report", func(w *workv1.ManifestWork) bool {
		_, _, ok0 := wouldChange(w, 0)
		_, _, ok1 := wouldChange(w, 1)
		return ok0 && ok1 && workWouldChange(w) != nil && hasCondition(w, 2, workv1.ManifestApplied, metav1.ConditionFalse)
	})
	if d, _, _ := wouldChange(w, 0); !d.Create {
		t.Errorf("ConfigMap a: %+v, want WouldCreate", d)
	}
	if d, c, _ := wouldChange(w, 1); !slices.Equal(d.Fields, []workreport.FieldChange{{Path: ".data.k", Live: `"by-hand"`, Want: `"2"`}}) {
		t.Errorf("ConfigMap b: %q, want .data.k \"by-hand\" → \"2\"", c.Message)
	}
	if c := manifestCondition(w, 2, workreport.ConditionWouldChange); c != nil {
		t.Errorf("the Widget, of a kind the spoke does not serve, has %+v; want no WouldChange", c)
	}
	if c := manifestCondition(w, 2, workv1.ManifestApplied); c.Reason != agent.ReasonUnknownKind {
		t.Errorf("the Widget's Applied is %+v; want False/%s", c, agent.ReasonUnknownKind)
	}
	if c := workWouldChange(w); !strings.Contains(c.Message, "would change 2 of its 2 objects") {
		t.Errorf("the work's WouldChange %q; want 2 of the 2 objects compared", c.Message)
	}
	if f.configMapExists("a") {
		t.Error("the report-only work created ConfigMap a")
	}
	cm, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(t.Context(), "b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.ResourceVersion != made.ResourceVersion || len(cm.OwnerReferences) != 0 {
		t.Errorf("ConfigMap b was written (resourceVersion %s, was %s; owners %v)", cm.ResourceVersion, made.ResourceVersion, cm.OwnerReferences)
	}
	if applied := f.appliedResources(w.Name); len(applied) != 0 {
		t.Errorf("the AppliedManifestWork lists %+v; want nothing", applied)
	}
	if u, r := applies("Update")-updates, applies("ReadOnly")-reads; u != 0 || r < 2 {
		t.Errorf("ferry_agent_manifest_applies_total counted %v Update and %v ReadOnly applies; want none and at least 2: the manifests were read", u, r)
	}

	f.update(w.Name, func(w *workv1.ManifestWork) { delete(w.Annotations, workreport.AnnotationReportDiff) })
	w = f.waitWork(w.Name, "applied without the annotation", func(w *workv1.ManifestWork) bool {
		return hasCondition(w, 0, workv1.ManifestApplied, metav1.ConditionTrue) && hasCondition(w, 1, workv1.ManifestApplied, metav1.ConditionTrue) &&
			f.configMapExists("a")
	})
	for ordinal := range int32(3) {
		if c := manifestCondition(w, ordinal, workreport.ConditionWouldChange); c != nil {
			t.Errorf("manifest %d of a work no longer report-only has %+v", ordinal, c)
		}
	}
	if c := meta.FindStatusCondition(w.Status.Conditions, workreport.ConditionWouldChange); c != nil {
		t.Errorf("a work no longer report-only has %+v", c)
	}
}

// A Secret's values are never in the report: the field that differs is named, its values shown as
// (hidden); neither the value nor its base64 is anywhere in the work's status.
func TestReportOnlyWorkHidesSecretValues(t *testing.T) {
	f := startAgent(t, withResync(time.Hour))
	f.spokeNamespace()
	const live, wanted = "live-password-4711", "wanted-password-0815"
	if _, err := f.kube.CoreV1().Secrets(f.cluster).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: f.cluster}, StringData: map[string]string{"password": live}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secret := `{apiVersion: v1, kind: Secret, metadata: {name: db, namespace: "{{ns}}"}, stringData: {password: "` + wanted + `"}}`
	w := f.create(f.reportOnlyWork("report-secret", true, secret))
	w = f.waitWork(w.Name, "the report", func(w *workv1.ManifestWork) bool {
		_, _, ok := wouldChange(w, 0)
		return ok
	})
	d, c, _ := wouldChange(w, 0)
	if want := []workreport.FieldChange{{Path: ".data.password", Live: workreport.HiddenValue, Want: workreport.HiddenValue}}; !slices.Equal(d.Fields, want) {
		t.Errorf("the Secret's WouldChange is %q; want .data.password (hidden) → (hidden)", c.Message)
	}
	status, err := json.Marshal(w.Status)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString
	for _, v := range []string{live, wanted, b64([]byte(live)), b64([]byte(wanted))} {
		if strings.Contains(string(status), v) {
			t.Errorf("the work's status shows a secret value: %s", status)
		}
	}
}

// An idle report-only work costs nothing: resyncs take each manifest's last read again, with what it
// compared, while the object's watch shows it unchanged, so they neither read the spoke nor write the
// status again.
func TestIdleReportOnlyWorkReadsAndWritesNothing(t *testing.T) {
	f := startAgent(t, withResync(100*time.Millisecond))
	f.spokeNamespace()
	f.createConfigMap("b", "by-hand")
	w := f.create(f.reportOnlyWork("report-idle", true, configMapA, configMapB))
	f.waitWork(w.Name, "the report", func(w *workv1.ManifestWork) bool {
		c := workWouldChange(w)
		return c != nil && strings.Contains(c.Message, "2 of its 2 objects")
	})
	reads := f.spokeReads.Load()
	if h, s := f.writesOfQuietResyncs(2); h != 0 || s != 0 {
		t.Errorf("resyncs with nothing changed wrote %d times to the hub and %d times to the spoke, want 0", h, s)
	}
	if n := f.spokeReads.Load() - reads; n != 0 {
		t.Errorf("resyncs with nothing changed read the spoke %d times, want 0", n)
	}
	w, err := f.hub.WorkV1().ManifestWorks(f.cluster).Get(t.Context(), w.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d0, _, ok0 := wouldChange(w, 0)
	d1, c1, ok1 := wouldChange(w, 1)
	if !ok0 || !d0.Create || !ok1 || len(d1.Fields) != 1 {
		t.Errorf("after idle resyncs the report is ConfigMap a %+v, ConfigMap b %+v; want WouldCreate and .data.k", d0, c1)
	}
}
