package main

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/apprevision"
)

// record stores data as revision n, named name, of AppConfig app in default, as ferry-hub records it
// (pkg/hub buildAppRevision): the labels naming the AppConfig and the revision's hash, owned by the
// AppConfig. The hub does not run: the test decides what each revision holds.
func (h *rolloutHub) record(app string, n int64, name string, data apprevision.Data) {
	h.t.Helper()
	raw, err := json.Marshal(data)
	if err != nil {
		h.t.Fatal(err)
	}
	owner := h.app(app)
	yes := true
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Labels: map[string]string{v1alpha2.LabelAppConfigNamespace: "default", v1alpha2.LabelAppConfigName: app,
				apprevision.LabelHash: strings.TrimPrefix(name, app+"-")},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha2.SchemeGroupVersion.String(), Kind: "ApplicationConfiguration",
				Name: app, UID: owner.UID, BlockOwnerDeletion: &yes}}},
		Data:     runtime.RawExtension{Raw: raw},
		Revision: n,
	}
	if err := h.client.Create(h.t.Context(), rev); err != nil {
		h.t.Fatal(err)
	}
}

// header is the first line rollout diff printed.
func header(out string) string {
	first, _, _ := strings.Cut(out, "\n")
	return first
}

// `kubectl ferry rollout diff` prints what one recorded revision changes against another: the objects,
// the work spec and the overrides; for one cluster, what it gets of each; by default, what the revision
// rolling out changes; and says why it cannot compare.
func TestKubectlFerryRolloutDiff(t *testing.T) {
	env := localcluster.StartForTest(t, localcluster.Options{})
	hubClient, err := client.New(env.Hub.Config, client.Options{Scheme: mustScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	h := &rolloutHub{t: t, client: hubClient, kubeconfig: env.Hub.Kubeconfig}
	for name, region := range map[string]string{"eu-1": "eu", "us-1": "us", "lab": ""} {
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if region != "" {
			mc.Labels = map[string]string{"region": region}
		}
		if err := hubClient.Create(t.Context(), mc); err != nil {
			t.Fatal(err)
		}
	}

	// The component's workload, labelled as the hub renders it: image overrides change workloads only.
	deployment := func(image string) string {
		return `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: default,
  labels: {app.oam.dev/component: web, app.oam.dev/resourceType: WORKLOAD}}, spec: {replicas: 1,
  selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: "` + image + `"}]}}}}`
	}
	service := `{apiVersion: v1, kind: Service, metadata: {name: web, namespace: default}, spec: {ports: [{port: 80}], selector: {app: web}}}`
	configMap := `{apiVersion: v1, kind: ConfigMap, metadata: {name: web-config, namespace: default}, data: {greeting: hello}}`
	registry := func(host string) v1alpha2.Override {
		return v1alpha2.Override{Name: "regional-registry",
			ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: metav1.LabelSelectorOpExists}}},
			Image:           &v1alpha2.ImageOverride{Registry: host}}
	}
	labReplicas := v1alpha2.Override{Name: "lab-replicas", Clusters: []string{"lab"}, Patches: []v1alpha2.ObjectPatch{{
		Target: v1alpha2.ObjectTarget{Kind: "Deployment"}, MergePatch: &runtime.RawExtension{Raw: []byte(`{"spec":{"replicas":3}}`)}}}}
	euReplicas := v1alpha2.Override{Name: "eu-replicas", Clusters: []string{"eu-1"}, Patches: []v1alpha2.ObjectPatch{{
		Target: v1alpha2.ObjectTarget{Kind: "Deployment"}, MergePatch: &runtime.RawExtension{Raw: []byte(`{"spec":{"replicas":2}}`)}}}}
	// The lab has no zone label: revision 3 cannot be rendered for it.
	labZone := v1alpha2.Override{Name: "zone", Clusters: []string{"lab"}, Annotations: map[string]string{"example.com/zone": "${cluster.labels[zone]}"}}
	serverSideApplied := []workv1.ManifestConfigOption{{
		ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Name: "web-config", Namespace: "default"},
		UpdateStrategy:     &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply}}}

	h.create("shop", nil)
	// 1: nginx:1 from the regional registry; 2: nginx:2 from a mirror, and a ConfigMap applied server-side;
	// 3: as 2, with more replicas in eu-1, and an override the lab cannot be rendered with.
	one := apprevision.Data{Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{
		Manifests: manifestWork(t, "", deployment("nginx:1"), service).Spec.Workload.Manifests}},
		Overrides: []v1alpha2.Override{registry("registry.${cluster.labels[region]}.example.com"), labReplicas}}
	two := apprevision.Data{Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{
		Manifests: manifestWork(t, "", deployment("nginx:2"), service, configMap).Spec.Workload.Manifests},
		ManifestConfigs: serverSideApplied},
		Overrides: []v1alpha2.Override{registry("mirror.${cluster.labels[region]}.example.com"), labReplicas}}
	three := two
	three.Overrides = append(append([]v1alpha2.Override{}, two.Overrides...), euReplicas, labZone)
	h.record("shop", 1, "shop-a1", one)
	h.record("shop", 2, "shop-b2", two)
	h.record("shop", 3, "shop-c3", three)

	t.Run("changed image, added ConfigMap, its strategy and a changed override, each with its diff", func(t *testing.T) {
		golden(t, "rollout-diff.golden", h.mustRun("rollout", "diff", "shop", "-n", "default", "--from", "1", "--to", "2"))
	})

	t.Run("--cluster compares what the cluster gets, naming the overrides that select it", func(t *testing.T) {
		golden(t, "rollout-diff-eu-1.golden", h.mustRun("rollout", "diff", "shop", "-n", "default", "--from", "2", "--to", "3", "--cluster", "eu-1"))

		// Neither new override selects us-1: it gets the same.
		out := h.mustRun("rollout", "diff", "shop", "-n", "default", "--from", "2", "--to", "3", "--cluster", "us-1")
		for _, want := range []string{"3 objects unchanged\n", "  revision 3 (shop-c3): regional-registry\n", "no difference\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("diff for us-1 does not say %q:\n%s", want, out)
			}
		}
	})

	t.Run("--cluster names a revision that cannot be rendered for the cluster, and why", func(t *testing.T) {
		out := h.mustRun("rollout", "diff", "shop", "-n", "default", "--from", "2", "--to", "3", "--cluster", "lab")
		for _, want := range []string{
			"revision 3 (shop-c3) cannot be rendered for cluster lab (ferry-hub delivers it nothing): override zone for cluster lab: cluster lab has no label zone (${cluster.labels[zone]})\n",
			"  revision 2 (shop-b2): lab-replicas\n  revision 3 (shop-c3): lab-replicas, zone\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("diff for lab does not say %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "no difference") {
			t.Errorf("diff for lab says no difference where a revision cannot be rendered:\n%s", out)
		}
	})

	t.Run("a revision against itself: no difference", func(t *testing.T) {
		out := h.mustRun("rollout", "diff", "shop", "-n", "default", "--from", "2", "--to", "2")
		if want := "AppConfig default/shop: revision 2 (shop-b2) to revision 2 (shop-b2)\n3 objects unchanged\nno difference\n"; out != want {
			t.Errorf("diff of a revision against itself printed\n%s\nwant\n%s", out, want)
		}
	})

	t.Run("by default, the current revision against the one before, or the stable one while it rolls out", func(t *testing.T) {
		for _, step := range []struct {
			what   string
			status *v1alpha2.RolloutStatus
			args   []string
			want   string
		}{
			{"no rollout: the latest against the one before", nil, nil,
				"revision 2 (shop-b2) to revision 3 (shop-c3)"},
			{"3 rolling out: against the stable revision", &v1alpha2.RolloutStatus{Revision: "shop-c3", StableRevision: "shop-a1", Phase: v1alpha2.RolloutProgressing}, nil,
				"revision 1 (shop-a1) to revision 3 (shop-c3)"},
			{"3 rolling out, --to 3 named: against the stable revision", &v1alpha2.RolloutStatus{Revision: "shop-c3", StableRevision: "shop-a1", Phase: v1alpha2.RolloutProgressing}, []string{"--to", "3"},
				"revision 1 (shop-a1) to revision 3 (shop-c3)"},
			{"2 rolling out: 2 is the current revision", &v1alpha2.RolloutStatus{Revision: "shop-b2", StableRevision: "shop-a1", Phase: v1alpha2.RolloutHalted}, nil,
				"revision 1 (shop-a1) to revision 2 (shop-b2)"},
			{"3 rolling out, --from 2 named", &v1alpha2.RolloutStatus{Revision: "shop-c3", StableRevision: "shop-a1", Phase: v1alpha2.RolloutProgressing}, []string{"--from", "2"},
				"revision 2 (shop-b2) to revision 3 (shop-c3)"},
			{"3 complete: against the one before", &v1alpha2.RolloutStatus{Revision: "shop-c3", StableRevision: "shop-c3", Phase: v1alpha2.RolloutComplete}, nil,
				"revision 2 (shop-b2) to revision 3 (shop-c3)"},
		} {
			h.report("shop", 0, step.status)
			out := h.mustRun(append([]string{"rollout", "diff", "shop", "-n", "default"}, step.args...)...)
			if got, want := header(out), "AppConfig default/shop: "+step.want; got != want {
				t.Errorf("%s: %q, want %q", step.what, got, want)
			}
		}
	})

	t.Run("says why it cannot compare", func(t *testing.T) {
		h.report("shop", 0, nil)
		h.mustFail([]string{"rollout", "diff", "shop", "-n", "default", "--from", "7"},
			"--from 7: AppConfig default/shop has no revision 7; its recorded revisions: 1, 2, 3")
		h.mustFail([]string{"rollout", "diff", "shop", "-n", "default", "--to", "1"},
			"AppConfig default/shop has no revision before revision 1 (shop-a1) to compare it with; name one with --from")
		h.mustFail([]string{"rollout", "diff", "shop", "-n", "default", "--from", "-1"}, "revisions are numbered from 1")

		h.report("shop", 0, &v1alpha2.RolloutStatus{Revision: "shop-c3", StableRevision: "shop-0", Phase: v1alpha2.RolloutProgressing})
		h.mustFail([]string{"rollout", "diff", "shop", "-n", "default"},
			"the stable revision shop-0 of AppConfig default/shop is no longer recorded; name the revision to compare with --from")

		h.create("solo", nil)
		h.mustFail([]string{"rollout", "diff", "solo", "-n", "default"}, "AppConfig default/solo has no recorded revision yet")
		h.record("solo", 1, "solo-a1", one)
		h.mustFail([]string{"rollout", "diff", "solo", "-n", "default"},
			"AppConfig default/solo has one recorded revision only, 1 (solo-a1): nothing to compare it with")

		h.mustFail([]string{"rollout", "diff", "shop", "-n", "default", "--from", "1", "--to", "2", "--cluster", "nowhere"},
			"read ManagedCluster nowhere")
	})

	t.Run("overrides that only change their order are a difference: they apply in order", func(t *testing.T) {
		reordered := one
		reordered.Overrides = []v1alpha2.Override{one.Overrides[1], one.Overrides[0]}
		h.record("solo", 2, "solo-b2", reordered)
		out := h.mustRun("rollout", "diff", "solo", "-n", "default")
		want := "AppConfig default/solo: revision 1 (solo-a1) to revision 2 (solo-b2)\n2 objects unchanged\n" +
			"overrides reordered (they apply in order): regional-registry, lab-replicas in revision 1 (solo-a1); lab-replicas, regional-registry in revision 2 (solo-b2)\n"
		if out != want {
			t.Errorf("diff of reordered overrides printed\n%s\nwant\n%s", out, want)
		}
	})
}
