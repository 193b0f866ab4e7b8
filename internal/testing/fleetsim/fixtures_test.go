package fleetsim

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
)

// hubWork is a ManifestWork as ferry-hub writes one for an AppConfig: a Deployment workload (two
// replicas) with WellKnownStatus feedback, then a Service trait without, each with its strategy.
func hubWork(cluster string, gen int64) *workv1.ManifestWork {
	deployment := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop","labels":{"app.oam.dev/component":"web"}},` +
		`"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},` +
		`"spec":{"containers":[{"name":"web","image":"nginx:1"}]}}}}`
	service := `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"shop"},"spec":{"ports":[{"port":80}]}}`
	update := &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeUpdate}
	return &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: "shop.web", Namespace: cluster, Generation: gen,
			Labels: map[string]string{"ferry.io/appconfig-name": "web"}},
		Spec: workv1.ManifestWorkSpec{
			Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
				{RawExtension: runtime.RawExtension{Raw: []byte(deployment)}},
				{RawExtension: runtime.RawExtension{Raw: []byte(service)}},
			}},
			ManifestConfigs: []workv1.ManifestConfigOption{
				{ResourceIdentifier: workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web"},
					UpdateStrategy: update, FeedbackRules: []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}}},
				{ResourceIdentifier: workv1.ResourceIdentifier{Resource: "services", Namespace: "shop", Name: "web"}, UpdateStrategy: update},
			},
		},
	}
}
