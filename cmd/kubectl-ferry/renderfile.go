package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/override"
	"github.com/ferry-mc/ferry/pkg/render"
)

var (
	traitDefinitions = v1alpha2.SchemeGroupVersion.WithResource("traitdefinitions")
	components       = v1alpha2.SchemeGroupVersion.WithResource("components")
)

// appFile is what render -f reads: one ApplicationConfiguration, and Components to render it with in
// place of those of the same name on the hub.
type appFile struct {
	app        *v1alpha2.ApplicationConfiguration
	components map[string]*v1alpha2.Component
}

// readAppFile reads path ("-": standard input), a YAML or JSON stream, into an appFile; namespace is
// where objects without one are.
func readAppFile(path string, stdin io.Reader, namespace string) (*appFile, error) {
	in := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in = f
	}
	out := &appFile{components: map[string]*v1alpha2.Component{}}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReader(in), 4096)
	for n := 0; ; n++ {
		u := &unstructured.Unstructured{}
		if err := decoder.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, n+1, err)
		}
		if u.Object == nil {
			continue
		}
		if u.GetNamespace() == "" {
			u.SetNamespace(namespace)
		}
		gvk := u.GroupVersionKind()
		var err error
		switch {
		case gvk.GroupVersion() != v1alpha2.SchemeGroupVersion:
			return nil, fmt.Errorf("%s: document %d is a %s: render -f takes an ApplicationConfiguration and its Components (%s)", path, n+1, gvk, v1alpha2.SchemeGroupVersion)
		case gvk.Kind == "ApplicationConfiguration" && out.app != nil:
			return nil, fmt.Errorf("%s: more than one ApplicationConfiguration: render them one at a time", path)
		case gvk.Kind == "ApplicationConfiguration":
			out.app = &v1alpha2.ApplicationConfiguration{}
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out.app)
		case gvk.Kind == "Component":
			c := &v1alpha2.Component{}
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, c)
			out.components[c.Name] = c
		default:
			return nil, fmt.Errorf("%s: document %d is a %s: render -f takes an ApplicationConfiguration and its Components", path, n+1, gvk.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, n+1, err)
		}
	}
	if out.app == nil {
		return nil, fmt.Errorf("%s holds no ApplicationConfiguration", path)
	}
	for name, c := range out.components {
		if c.Namespace != out.app.Namespace {
			return nil, fmt.Errorf("%s: Component %s is in namespace %s, the ApplicationConfiguration in %s", path, name, c.Namespace, out.app.Namespace)
		}
	}
	return out, nil
}

// renderFile renders f's AppConfig, read from file, for cluster as ferry-hub would once it is applied: its Components
// from f or, for those f does not hold, from the hub, the TraitDefinitions from the hub, under mode (the
// hub's --apply-once-only); then the overrides that select cluster, with its facts from the hub.
func renderFile(ctx context.Context, clients *hubClients, file string, f *appFile, cluster string, mode render.ApplyOnceOnly) (*rendered, error) {
	app := f.app
	in := render.Input{
		App:       app,
		Component: fileComponent(ctx, clients, f),
		TraitDefinition: func(t *unstructured.Unstructured) (*v1alpha2.TraitDefinition, error) {
			name := render.ResourceOf(t, clients.mapper) + "." + t.GroupVersionKind().Group
			u, err := clients.dynamic.Resource(traitDefinitions).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("TraitDefinition %s: %w", name, err)
			}
			def := &v1alpha2.TraitDefinition{}
			return def, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, def)
		},
		PublishedPatches: func(component string, traits []*unstructured.Unstructured) ([]render.Patch, error) {
			return nil, fmt.Errorf("component %s has patch traits (%s %s, ...), whose controllers publish their patches on the hub once the "+
				"AppConfig is applied: render -f cannot know them; apply it and run kubectl ferry render appconfig %s", component,
				traits[0].GetKind(), traits[0].GetName(), app.Name)
		},
		PatchedRevision: func(component string, spec *v1alpha2.ComponentSpec) (string, bool, error) {
			return componentRevisionName(ctx, clients, app.Namespace, component, spec)
		},
		ClusterScoped: render.ClusterScopedIn(clients.mapper),
	}
	comps, err := render.Render(in)
	if err != nil {
		return nil, err
	}
	overrides, overridden, err := render.Overrides(in, comps, mode, clients.mapper)
	if err != nil {
		return nil, err
	}
	work, err := render.BuildManifestWork(app, cluster, comps, mode, clients.mapper)
	if err != nil {
		return nil, err
	}
	facts := override.Cluster{Name: cluster}
	if len(overrides) > 0 {
		if facts, err = clusterFacts(ctx, clients, app, cluster, overrides); err != nil {
			return nil, err
		}
	}
	spec, applied, err := override.ForCluster(work.Spec, overrides, overridden, facts)
	if err != nil {
		return nil, fmt.Errorf("the AppConfig cannot be rendered for cluster %s (ferry-hub would deliver it nothing and say so): %w", cluster, err)
	}
	work.TypeMeta = metav1.TypeMeta{APIVersion: workv1.GroupVersion.String(), Kind: "ManifestWork"}
	work.Spec = spec
	keepsEarlier := slices.ContainsFunc(comps, func(rc render.Component) bool { return rc.RevisionEnabled })
	return &rendered{app: app, file: file, overrides: applied, work: work, keepsEarlier: keepsEarlier}, nil
}

// fileComponent resolves an entry of f's AppConfig: a Component of f at the revision the hub would
// record for its spec, else the hub's Component at its latest revision, or the revision an entry pins.
func fileComponent(ctx context.Context, clients *hubClients, f *appFile) func(v1alpha2.ApplicationConfigurationComponent) (render.Resolved, error) {
	ns := f.app.Namespace
	return func(e v1alpha2.ApplicationConfigurationComponent) (render.Resolved, error) {
		if c, ok := f.components[e.ComponentName]; ok && e.RevisionName == "" {
			name, _, err := componentRevisionName(ctx, clients, ns, c.Name, &c.Spec)
			return render.Resolved{ComponentName: c.Name, RevisionName: name, Spec: &c.Spec}, err
		}
		revName := e.RevisionName
		if revName == "" {
			u, err := clients.dynamic.Resource(components).Namespace(ns).Get(ctx, e.ComponentName, metav1.GetOptions{})
			if err != nil {
				return render.Resolved{}, fmt.Errorf("component %s (not in the file): %w", e.ComponentName, err)
			}
			comp := &v1alpha2.Component{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, comp); err != nil {
				return render.Resolved{}, fmt.Errorf("component %s: %w", e.ComponentName, err)
			}
			if comp.Status.LatestRevision == nil {
				return render.Resolved{}, fmt.Errorf("component %s has no revision recorded yet", e.ComponentName)
			}
			revName = comp.Status.LatestRevision.Name
		}
		rev, err := clients.apps.ControllerRevisions(ns).Get(ctx, revName, metav1.GetOptions{})
		if err != nil {
			return render.Resolved{}, fmt.Errorf("revision %s: %w", revName, err)
		}
		return render.ResolvedOf(rev)
	}
}

// componentRevisionName is the revision of component that holds spec, or the one ferry-hub would
// record it as (the next), as ferry-hub names them.
func componentRevisionName(ctx context.Context, clients *hubClients, namespace, component string, spec *v1alpha2.ComponentSpec) (string, bool, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return "", false, err
	}
	hash := render.SpecHash(raw)
	list, err := clients.apps.ControllerRevisions(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{v1alpha2.LabelRevisionOfComponent: component}).String()})
	if err != nil && !apierrors.IsNotFound(err) {
		return "", false, fmt.Errorf("list the revisions of component %s: %w", component, err)
	}
	name, isNew := render.ComponentRevisionFor(component, hash, list.Items)
	return name, isNew, nil
}
