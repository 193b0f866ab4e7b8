package deployrunner

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// FieldManager names the local runs of deploy/ (ferry-local, the end-to-end tests) in the
// managedFields of what ApplyTo applies.
const FieldManager = "ferry-local"

// ApplyTo applies every object of the install but its Deployment (Resources) to the cluster cfg
// reaches, named cluster in errors, with server-side apply in kustomize's order (namespaces first),
// as `kubectl apply -k` would. A CRD the cluster already serves because it was installed from
// manifests/ (preinstalled) is left alone when deploy/'s copy is identical, and is an error when it
// is not: the cluster would then serve something other than what ships.
func (in *Install) ApplyTo(ctx context.Context, cluster string, cfg *rest.Config, preinstalled []*apiextensionsv1.CustomResourceDefinition) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("%s on %s: %w", in.Dir, cluster, err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("%s on %s: %w", in.Dir, cluster, err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	for _, obj := range in.Resources() {
		if obj.GroupVersionKind().GroupKind() == apiextensionsv1.Kind("CustomResourceDefinition") {
			same, err := installedIdentically(obj, preinstalled)
			if err != nil {
				return fmt.Errorf("%s on %s: %w", in.Dir, cluster, err)
			}
			if same {
				continue
			}
		}
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			mapper.Reset() // a kind of a CRD applied a moment ago
			if m, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				return fmt.Errorf("%s on %s: %s %s: %w", in.Dir, cluster, gvk.Kind, obj.GetName(), err)
			}
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
		}
		// Force: the local clusters are the caller's own, and deploy/ is the truth for these objects.
		if _, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return fmt.Errorf("%s on %s: apply %s %s: %w", in.Dir, cluster, gvk.Kind, namespacedName(obj), err)
		}
	}
	return nil
}

// installedIdentically reports whether the rendered CRD is one of preinstalled with the same spec.
func installedIdentically(obj *unstructured.Unstructured, preinstalled []*apiextensionsv1.CustomResourceDefinition) (bool, error) {
	rendered := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, rendered); err != nil {
		return false, fmt.Errorf("CRD %s: %w", obj.GetName(), err)
	}
	for _, crd := range preinstalled {
		if crd.Name != rendered.Name {
			continue
		}
		if !equality.Semantic.DeepEqual(crd.Spec, rendered.Spec) {
			return false, fmt.Errorf("CRD %s differs from the one installed from manifests/; run make manifests", crd.Name)
		}
		return true, nil
	}
	return false, nil
}

func namespacedName(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}
