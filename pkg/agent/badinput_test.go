package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/agent"
)

// badManifest is one manifest a user got wrong, and what the agent must say about it.
type badManifest struct {
	name     string
	manifest string
	config   func(ns string) workv1.ManifestConfigOption // its manifestConfigs entry, if any
	// The manifest's Applied condition: its status, its reason, and words its message must contain
	// for a person to know what to fix.
	applied metav1.ConditionStatus
	reason  string
	says    []string
	// check, if set, asserts more about the manifest's status entry and the spoke.
	check func(t *testing.T, f *agentFixture, m workv1.ManifestCondition)
}

// Issue 8: one work carrying a good ConfigMap beside manifests that are each wrong in their own way.
// Every wrong manifest gets an Applied condition of its own with a reason and a message that says what
// to fix; the good one applies as if the others were not there, and nothing of them reaches the spoke.
func TestBadInputManifestsFailAloneWhileTheRestApplies(t *testing.T) {
	f := startAgent(t)
	cases := []badManifest{
		{
			name:     "unknown kind",
			manifest: `{apiVersion: example.com/v1, kind: Nope, metadata: {name: nope, namespace: "{{ns}}"}}`,
			applied:  metav1.ConditionFalse, reason: agent.ReasonUnknownKind,
			says: []string{`"Nope"`, `"example.com/v1"`, "CustomResourceDefinition"},
		},
		{
			// The API server ignores metadata.namespace on a cluster-scoped object; so does the engine,
			// and the status names the object as it is: without a namespace.
			name:     "cluster-scoped object with a namespace",
			manifest: `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: "badinput-{{ns}}", namespace: "{{ns}}"}, rules: []}`,
			applied:  metav1.ConditionTrue, reason: agent.ReasonAppliedManifestComplete,
			check: func(t *testing.T, f *agentFixture, m workv1.ManifestCondition) {
				if m.ResourceMeta.Namespace != "" || m.ResourceMeta.Resource != "clusterroles" {
					t.Errorf("resourceMeta = %+v, want clusterroles without a namespace", m.ResourceMeta)
				}
				role, err := f.kube.RbacV1().ClusterRoles().Get(t.Context(), "badinput-"+f.cluster, metav1.GetOptions{})
				if err != nil {
					t.Fatalf("the ClusterRole was not applied: %v", err)
				}
				if role.Namespace != "" {
					t.Errorf("ClusterRole namespace = %q, want none", role.Namespace)
				}
			},
		},
		{
			name:     "namespaced object without a namespace",
			manifest: `{apiVersion: v1, kind: ConfigMap, metadata: {name: no-namespace}, data: {k: "1"}}`,
			applied:  metav1.ConditionFalse, reason: agent.ReasonAppliedManifestFailed,
			says: []string{`ConfigMap "no-namespace" is namespaced`, "metadata.namespace"},
		},
		{
			name:     "name over 253 characters",
			manifest: `{apiVersion: v1, kind: ConfigMap, metadata: {name: ` + strings.Repeat("a", 254) + `, namespace: "{{ns}}"}}`,
			applied:  metav1.ConditionFalse, reason: agent.ReasonAppliedManifestFailed,
			says: []string{"metadata.name", "must be no more than 253 characters"},
		},
		{
			name:     "name with uppercase letters",
			manifest: `{apiVersion: v1, kind: ConfigMap, metadata: {name: Not_A_Name, namespace: "{{ns}}"}}`,
			applied:  metav1.ConditionFalse, reason: agent.ReasonAppliedManifestFailed,
			says: []string{"Not_A_Name", "metadata.name", "lowercase"},
		},
		{
			// A JSONPath that does not parse fails the feedback, not the apply: the object is there and
			// Available, and StatusFeedbackSynced says which rule and path to fix.
			name:     "invalid jsonPath in feedbackRules",
			manifest: `{apiVersion: v1, kind: ConfigMap, metadata: {name: bad-feedback, namespace: "{{ns}}"}, data: {k: "1"}}`,
			config: func(ns string) workv1.ManifestConfigOption {
				return workv1.ManifestConfigOption{
					ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: ns, Name: "bad-feedback"},
					FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{
						{Name: "k", Path: ".data[?(@.k=="},
					}}},
				}
			},
			applied: metav1.ConditionTrue, reason: agent.ReasonAppliedManifestComplete,
			check: func(t *testing.T, f *agentFixture, m workv1.ManifestCondition) {
				if _, ok := spokeConfigMap(t, f, "bad-feedback"); !ok {
					t.Error("configmap bad-feedback was not applied")
				}
				c := findCondition(m.Conditions, agent.ConditionStatusFeedbackSynced)
				if c == nil || c.Status != metav1.ConditionFalse || c.Reason != agent.ReasonStatusFeedbackFailed {
					t.Fatalf("StatusFeedbackSynced = %+v, want False %s", c, agent.ReasonStatusFeedbackFailed)
				}
				for _, want := range []string{"feedbackRules[0]", `".data[?(@.k=="`} {
					if !strings.Contains(c.Message, want) {
						t.Errorf("StatusFeedbackSynced message %q does not name %s", c.Message, want)
					}
				}
			},
		},
		{
			name:     "invalid jq in ServerSideApply ignoreFields",
			manifest: `{apiVersion: v1, kind: ConfigMap, metadata: {name: bad-jq, namespace: "{{ns}}"}, data: {k: "1"}}`,
			config: func(ns string) workv1.ManifestConfigOption {
				return strategy("configmaps", ns, "bad-jq", workv1.UpdateStrategy{
					Type: workv1.UpdateStrategyTypeServerSideApply,
					ServerSideApply: &workv1.ServerSideApplyConfig{IgnoreFields: []workv1.IgnoreField{{
						Condition: workv1.IgnoreFieldsConditionOnSpokeChange, JQPathExpressions: []string{".data | ("},
					}}},
				})
			},
			applied: metav1.ConditionFalse, reason: workv1.AppliedManifestSSAIgnoreFieldError,
			says:  []string{"ignoreFields", "jq", `".data | ("`},
			check: noConfigMap("bad-jq"),
		},
		{
			name:     "invalid jsonPath in ServerSideApply ignoreFields",
			manifest: `{apiVersion: v1, kind: ConfigMap, metadata: {name: bad-ignore-path, namespace: "{{ns}}"}, data: {k: "1"}}`,
			config: func(ns string) workv1.ManifestConfigOption {
				return strategy("configmaps", ns, "bad-ignore-path", workv1.UpdateStrategy{
					Type: workv1.UpdateStrategyTypeServerSideApply,
					ServerSideApply: &workv1.ServerSideApplyConfig{IgnoreFields: []workv1.IgnoreField{{
						Condition: workv1.IgnoreFieldsConditionOnSpokePresent, JSONPaths: []string{".data[?("},
					}}},
				})
			},
			applied: metav1.ConditionFalse, reason: workv1.AppliedManifestSSAIgnoreFieldError,
			says:  []string{"ignoreFields", "JSONPath", `".data[?("`},
			check: noConfigMap("bad-ignore-path"),
		},
	}

	t.Run("the hub refuses a manifest without kind or apiVersion", func(t *testing.T) {
		// The ManifestWork CRD declares manifests embedded resources: the hub's API server requires
		// both fields, so such a manifest never reaches the agent.
		w := f.work("no-kind-no-api-version", configMapA,
			`{apiVersion: v1, metadata: {name: no-kind, namespace: "{{ns}}"}, data: {k: "1"}}`,
			`{kind: ConfigMap, metadata: {name: no-api-version, namespace: "{{ns}}"}, data: {k: "1"}}`)
		_, err := f.hub.WorkV1().ManifestWorks(f.cluster).Create(t.Context(), w, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("create error = %v, want the work refused as invalid", err)
		}
		for _, want := range []string{"spec.workload.manifests[1].kind: Required value", "spec.workload.manifests[2].apiVersion: Required value"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("create error %q does not say %s", err, want)
			}
		}
	})

	// The namespace and the good ConfigMap come first: ordinals 0 and 1; case i is ordinal i+2.
	manifests := []string{namespaceManifest, configMapA}
	var configs []workv1.ManifestConfigOption
	for _, c := range cases {
		manifests = append(manifests, c.manifest)
		if c.config != nil {
			configs = append(configs, c.config(f.cluster))
		}
	}
	w := f.work("bad-input", manifests...)
	w.Spec.ManifestConfigs = configs
	f.create(w)
	got := f.waitWork(w.Name, "every manifest reported", func(w *workv1.ManifestWork) bool {
		for i := range w.Spec.Workload.Manifests {
			c := manifestCondition(w, int32(i), workv1.ManifestApplied)
			if c == nil || c.ObservedGeneration != w.Generation || c.Status == metav1.ConditionUnknown {
				return false
			}
		}
		return workCondition(w, workv1.WorkApplied, metav1.ConditionFalse)
	})

	t.Run("the good manifests apply", func(t *testing.T) {
		for ordinal := range int32(2) {
			if !hasCondition(got, ordinal, workv1.ManifestApplied, metav1.ConditionTrue) || !hasCondition(got, ordinal, workv1.ManifestAvailable, metav1.ConditionTrue) {
				t.Errorf("manifest %d: Applied %+v, Available %+v; want both True", ordinal,
					manifestCondition(got, ordinal, workv1.ManifestApplied), manifestCondition(got, ordinal, workv1.ManifestAvailable))
			}
		}
		if cm, ok := spokeConfigMap(t, f, "a"); !ok || cm.Data["k"] != "1" {
			t.Errorf("configmap a = %v (exists: %v), want the manifest's data", cm, ok)
		}
	})
	t.Run("the work says which manifests failed", func(t *testing.T) {
		c := findCondition(got.Status.Conditions, workv1.WorkApplied)
		if c.Reason != agent.ReasonWorkApplyFailed || !strings.Contains(c.Message, "ConfigMap "+f.cluster+"/bad-jq") {
			t.Errorf("work Applied = %s %q, want %s naming the failed manifests", c.Reason, c.Message, agent.ReasonWorkApplyFailed)
		}
	})
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := manifestStatus(got, int32(i+2))
			if m == nil {
				t.Fatalf("no status for manifest %d", i+2)
			}
			applied := findCondition(m.Conditions, workv1.ManifestApplied)
			t.Logf("resourceMeta %+v; Applied = %s %s %q", m.ResourceMeta, applied.Status, applied.Reason, applied.Message)
			if applied.Status != c.applied || applied.Reason != c.reason {
				t.Errorf("Applied = %s %s %q, want %s %s", applied.Status, applied.Reason, applied.Message, c.applied, c.reason)
			}
			for _, want := range c.says {
				if !strings.Contains(applied.Message, want) {
					t.Errorf("Applied message %q does not say %s", applied.Message, want)
				}
			}
			if c.check != nil {
				c.check(t, f, *m)
			}
		})
	}
}

// noConfigMap checks that a manifest that failed left nothing on the spoke.
func noConfigMap(name string) func(t *testing.T, f *agentFixture, m workv1.ManifestCondition) {
	return func(t *testing.T, f *agentFixture, m workv1.ManifestCondition) {
		if _, ok := spokeConfigMap(t, f, name); ok {
			t.Errorf("configmap %s was created although its manifest failed", name)
		}
		if c := findCondition(m.Conditions, workv1.ManifestAvailable); c == nil || c.Status != metav1.ConditionFalse {
			t.Errorf("Available = %+v, want False", c)
		}
	}
}

// spokeConfigMap reads a ConfigMap of the test's namespace on the spoke; ok is false when there is none.
func spokeConfigMap(t *testing.T, f *agentFixture, name string) (cm *corev1.ConfigMap, ok bool) {
	t.Helper()
	cm, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatalf("read configmap %s on the spoke: %v", name, err)
	}
	return cm, true
}

// pollUntil polls cond every 50ms until it holds, failing t after 60s: unlike f.eventually, it may be
// called from a subtest.
func pollUntil(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func manifestStatus(w *workv1.ManifestWork, ordinal int32) *workv1.ManifestCondition {
	for i := range w.Status.ResourceStatus.Manifests {
		if w.Status.ResourceStatus.Manifests[i].ResourceMeta.Ordinal == ordinal {
			return &w.Status.ResourceStatus.Manifests[i]
		}
	}
	return nil
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// Issue 8: a cluster-scoped manifest that carries a metadata.namespace is applied without it. Under
// ApplyOnce it must still be applied once: a change made on the spoke survives resyncs until the
// manifest changes, as it does for the same manifest without a namespace.
func TestBadInputClusterScopedManifestWithANamespaceIsAppliedOnceUnderApplyOnce(t *testing.T) {
	f := startAgent(t, withResync(100*time.Millisecond))
	name := "badinput-once-" + f.cluster
	w := f.work("cluster-scoped-once", `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: "badinput-once-{{ns}}", namespace: "{{ns}}"}, rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]}`)
	w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{
		ResourceIdentifier: workv1.ResourceIdentifier{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: name},
		UpdateStrategy:     &workv1.UpdateStrategy{Type: "ApplyOnce"},
	}}
	f.create(w)
	f.waitWork(w.Name, "applied", allApplied)

	role, err := f.kube.RbacV1().ClusterRoles().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role.Rules[0].Verbs = []string{"list"}
	if _, err := f.kube.RbacV1().ClusterRoles().Update(t.Context(), role, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	f.waitResyncs(5, 1)
	role, err = f.kube.RbacV1().ClusterRoles().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if verbs := role.Rules[0].Verbs; len(verbs) != 1 || verbs[0] != "list" {
		t.Errorf("verbs after resyncs = %v, want the spoke's change [list] kept under ApplyOnce", verbs)
	}
}
