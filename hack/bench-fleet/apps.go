package main

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/ferry-mc/ferry/internal/testing/fleetsim"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// namespace holds the benchmark's Components and AppConfigs on the hub; with --appconfig-namespaces
// each AppConfig and its Component are in a namespace of their own, namespace-<i> (appNamespace).
const namespace = "fleet-bench"

// appNamespace is the hub namespace of app-<i> and its Component web-<i>.
func (o *options) appNamespace(i int) string {
	if o.appConfigNamespaces {
		return fmt.Sprintf("%s-%d", namespace, i)
	}
	return namespace
}

// appNamespaces are the namespaces of the AppConfigs, each once, in the AppConfigs' order.
func (o *options) appNamespaces() []string {
	if !o.appConfigNamespaces {
		return []string{namespace}
	}
	out := make([]string, o.appConfigs)
	for i := range out {
		out[i] = o.appNamespace(i)
	}
	return out
}

// watchedNamespace is where the AppConfigs are for a watch or a list: their one namespace, or every
// namespace when each has its own.
func (o *options) watchedNamespace() string {
	if o.appConfigNamespaces {
		return metav1.NamespaceAll
	}
	return namespace
}

// setNames are the exclusive ManagedClusterSets the clusters are spread over (--cluster-sets), none
// without.
func (o *options) setNames() []string {
	if o.clusterSets == 0 {
		return nil
	}
	return fleetsim.ClusterSetNames("", o.clusterSets)
}

// sets are the ManagedClusterSets bound to every AppConfig namespace, so that every AppConfig reaches
// every cluster through them: OCM's global (every cluster), or with --cluster-sets the exclusive sets
// that together hold every cluster.
func (o *options) sets() []*clusterv1beta2.ManagedClusterSet {
	names := o.setNames()
	if len(names) == 0 {
		return []*clusterv1beta2.ManagedClusterSet{fleetsim.GlobalSet()}
	}
	out := make([]*clusterv1beta2.ManagedClusterSet, len(names))
	for k, name := range names {
		out[k] = fleetsim.ExclusiveSet(name)
	}
	return out
}

// tenancy says in words where the AppConfigs are and which ManagedClusterSets are bound to them: the
// run's mode, in its table and JSON.
func (o *options) tenancy() string {
	where := fmt.Sprintf("every AppConfig in namespace %s", namespace)
	there := "there"
	if o.appConfigNamespaces {
		where = fmt.Sprintf("each AppConfig with its Component in a namespace of its own (%s-<i>)", namespace)
		there = "in each"
	}
	bindings := count(len(o.sets())*len(o.appNamespaces()), "binding")
	if o.clusterSets == 0 {
		return fmt.Sprintf("%s; ManagedClusterSet %s (LabelSelector {}: every cluster) bound %s: %s", where, fleetsim.GlobalClusterSet, there, bindings)
	}
	fewest, most := o.clusters/o.clusterSets, (o.clusters+o.clusterSets-1)/o.clusterSets
	each := fmt.Sprintf("%d", fewest)
	if most != fewest {
		each = fmt.Sprintf("%d-%d", fewest, most)
	}
	return fmt.Sprintf("%s; %s (ExclusiveClusterSetLabel, %s clusters each, round-robin) bound %s: %s",
		where, count(o.clusterSets, "ManagedClusterSet"), each, there, bindings)
}

// count is n of a thing: "1 binding", "2 bindings".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// The images of the Components: the Component change moves web-0 from the first to the second.
const (
	image        = "nginx:1.27"
	changedImage = "nginx:1.27.1"
)

// The names of the Components and AppConfigs differ in every mode, also when each is in a namespace
// of its own: the benchmark tells AppConfigs, and their works (by the hub's label
// ferry.io/appconfig-name), apart by name.
func componentName(i int) string { return fmt.Sprintf("web-%d", i) }
func appName(i int) string       { return fmt.Sprintf("app-%d", i) }

// component is web-<i> in namespace ns, a Deployment of image img as examples/hello-app.yaml has it,
// with its image and replicas as parameters.
func component(ns string, i int, img string) *v1alpha2.Component {
	name := componentName(i)
	workload := fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":1,`+
		`"selector":{"matchLabels":{"app":%q}},"template":{"metadata":{"labels":{"app":%q}},`+
		`"spec":{"containers":[{"name":"web","image":%q}]}}}}`, name, name, img)
	return &v1alpha2.Component{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha2.ComponentSpec{
			Workload: runtime.RawExtension{Raw: []byte(workload)},
			Parameters: []v1alpha2.ComponentParameter{
				{Name: "image", FieldPaths: []string{"spec.template.spec.containers[0].image"}},
				{Name: "replicas", FieldPaths: []string{"spec.replicas"}},
			},
		},
	}
}

// appConfig is app-<i> in namespace ns: web-<i> with two replicas, placed by label on every
// registered cluster (the sets bound to ns hold them all). It leaves the image to the Component, so
// that a change of the Component's image changes what it delivers.
func appConfig(ns string, i int) *v1alpha2.ApplicationConfiguration {
	return &v1alpha2.ApplicationConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: appName(i), Namespace: ns},
		Spec: v1alpha2.ApplicationConfigurationSpec{
			Placement: &v1alpha2.Placement{ClusterSelector: fleetsim.Selector()},
			Components: []v1alpha2.ApplicationConfigurationComponent{{
				ComponentName:   componentName(i),
				ParameterValues: []v1alpha2.ComponentParameterValue{{Name: "replicas", Value: runtime.RawExtension{Raw: []byte("2")}}},
			}},
		},
	}
}

// regions is how many regions --overrides spreads the clusters over, each with an override of its own
// in every AppConfig.
const regions = 3

// regions is the clusters' regions: none without --overrides.
func (o *options) regions() int {
	if o.overrides {
		return regions
	}
	return 0
}

// overrides are app-<i>'s with --overrides: one per region, selecting its clusters by their label and
// giving web-<i> the registry <host>.<region>.example.com and every object the cluster's ID from its
// ClusterClaim — a value of its own per cluster, so that no two clusters' works are alike.
func overrides(i int, host string) []v1alpha2.Override {
	out := make([]v1alpha2.Override, regions)
	for r := range out {
		region := fleetsim.RegionOf(r, regions)
		out[r] = v1alpha2.Override{
			Name:            region,
			ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{fleetsim.RegionLabel: region}},
			Image:           &v1alpha2.ImageOverride{Component: componentName(i), Registry: host + ".${cluster.labels[" + fleetsim.RegionLabel + "]}.example.com"},
			Annotations:     map[string]string{"example.com/cluster-id": "${cluster.claims[id.k8s.io]}"},
		}
	}
	return out
}
