package main

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
	"k8s.io/client-go/restmapper"

	"github.com/ferry-mc/ferry/internal/localcluster"
	"github.com/ferry-mc/ferry/internal/shipped"
)

// fieldManager names ferry-local in the managedFields of what it applies.
const fieldManager = "ferry-local"

// applyInstall applies every object of in but its Deployment to the cluster with server-side apply,
// in kustomize's order (namespaces first), as `kubectl apply -k` would. A CRD the cluster already
// serves because internal/localcluster installed it from manifests/ (preinstalled) is left alone when
// deploy/'s copy is identical, and an error when it is not: the local clusters would then serve
// something other than what ships.
func applyInstall(ctx context.Context, c *localcluster.Cluster, in *shipped.Install, preinstalled []*apiextensionsv1.CustomResourceDefinition) error {
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	for _, obj := range in.Resources() {
		if obj.GroupVersionKind().GroupKind() == apiextensionsv1.Kind("CustomResourceDefinition") {
			same, err := installedIdentically(obj, preinstalled)
			if err != nil {
				return fmt.Errorf("%s on %s: %w", in.Dir, c.Name, err)
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
				return fmt.Errorf("%s on %s: %s %s: %w", in.Dir, c.Name, gvk.Kind, obj.GetName(), err)
			}
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
		}
		// Force: the local clusters are ferry-local's own, and deploy/ is the truth for these objects.
		if _, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
			return fmt.Errorf("%s on %s: apply %s %s: %w", in.Dir, c.Name, gvk.Kind, namespacedName(obj), err)
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
			return false, fmt.Errorf("CRD %s differs from the one internal/localcluster installs from manifests/; run make manifests", crd.Name)
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
