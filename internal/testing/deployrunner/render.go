package deployrunner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Install is one kustomization of deploy/ as `kubectl kustomize` renders it.
type Install struct {
	// Dir is the kustomization's directory.
	Dir string
	// Objects are the rendered objects, in kustomize's order (namespaces and CRDs first).
	Objects []*unstructured.Unstructured
	// Deployment is the install's one Deployment: the process it runs.
	Deployment *appsv1.Deployment
}

// Render renders the kustomization in dir with `kubectl kustomize`, the renderer a user of deploy/
// runs (`kubectl apply -k`), and finds its one Deployment.
func Render(ctx context.Context, dir string) (*Install, error) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		return nil, fmt.Errorf("render %s: kubectl is not in PATH (%w): deploy/ is rendered with `kubectl kustomize`; install kubectl 1.27 or newer", dir, err)
	}
	cmd := exec.CommandContext(ctx, kubectl, "kustomize", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("render %s: kubectl kustomize: %w: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	objs, err := DecodeObjects(out)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", dir, err)
	}
	d, err := theDeployment(objs)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", dir, err)
	}
	return &Install{Dir: dir, Objects: objs, Deployment: d}, nil
}

// Resources returns every rendered object but the Deployment: what has to exist before it runs.
func (in *Install) Resources() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range in.Objects {
		if !isDeployment(o) {
			out = append(out, o)
		}
	}
	return out
}

// DecodeObjects reads every object of a YAML or JSON stream, in order, skipping empty documents.
func DecodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode object %d: %w", len(objs)+1, err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

func isDeployment(o *unstructured.Unstructured) bool {
	return o.GetKind() == "Deployment" && o.GroupVersionKind().Group == appsv1.GroupName
}

// theDeployment returns the one Deployment among objs. One, because an install runs one binary: a
// second would leave unsaid which process a caller means.
func theDeployment(objs []*unstructured.Unstructured) (*appsv1.Deployment, error) {
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if isDeployment(o) {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("want exactly one Deployment, found %d", len(found))
	}
	d := &appsv1.Deployment{}
	// Strict: a field this client does not know would otherwise be dropped without a word.
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(found[0].Object, d, true); err != nil {
		return nil, fmt.Errorf("Deployment %s/%s: %w", found[0].GetNamespace(), found[0].GetName(), err)
	}
	return d, nil
}
