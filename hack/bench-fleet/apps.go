package main

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ferry-mc/ferry/internal/fleetsim"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// namespace holds the benchmark's Components and AppConfigs on the hub.
const namespace = "fleet-bench"

// The images of the Components: the Component change moves web-0 from the first to the second.
const (
	image        = "nginx:1.27"
	changedImage = "nginx:1.27.1"
)

func componentName(i int) string { return fmt.Sprintf("web-%d", i) }
func appName(i int) string       { return fmt.Sprintf("app-%d", i) }

// component is web-<i>, a Deployment of image img as examples/hello-app.yaml has it, with its image
// and replicas as parameters.
func component(i int, img string) *v1alpha2.Component {
	name := componentName(i)
	workload := fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":1,`+
		`"selector":{"matchLabels":{"app":%q}},"template":{"metadata":{"labels":{"app":%q}},`+
		`"spec":{"containers":[{"name":"web","image":%q}]}}}}`, name, name, img)
	return &v1alpha2.Component{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1alpha2.ComponentSpec{
			Workload: runtime.RawExtension{Raw: []byte(workload)},
			Parameters: []v1alpha2.ComponentParameter{
				{Name: "image", FieldPaths: []string{"spec.template.spec.containers[0].image"}},
				{Name: "replicas", FieldPaths: []string{"spec.replicas"}},
			},
		},
	}
}

// appConfig is app-<i>: web-<i> with two replicas, placed by label on every registered cluster. It
// leaves the image to the Component, so that a change of the Component's image changes what it
// delivers.
func appConfig(i int) *v1alpha2.ApplicationConfiguration {
	return &v1alpha2.ApplicationConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: appName(i), Namespace: namespace},
		Spec: v1alpha2.ApplicationConfigurationSpec{
			Placement: &v1alpha2.Placement{ClusterSelector: fleetsim.Selector()},
			Components: []v1alpha2.ApplicationConfigurationComponent{{
				ComponentName:   componentName(i),
				ParameterValues: []v1alpha2.ComponentParameterValue{{Name: "replicas", Value: runtime.RawExtension{Raw: []byte("2")}}},
			}},
		},
	}
}
