package v1alpha2_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// doc is one YAML document of a testdata file.
type doc struct {
	source string // file:index, for messages
	kind   string
	json   []byte
}

// readDocs returns every document of testdata/*.yaml, converted to JSON but otherwise as written.
func readDocs(t testing.TB) []doc {
	t.Helper()
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("testdata/*.yaml: %v (%d files)", err, len(files))
	}
	var docs []doc
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for i := 0; ; i++ {
			y, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: document %d: %v", f, i, err)
			}
			j, err := yaml.YAMLToJSON(y)
			if err != nil {
				t.Fatalf("%s: document %d: %v", f, i, err)
			}
			var meta struct{ Kind string }
			if err := json.Unmarshal(j, &meta); err != nil {
				t.Fatalf("%s: document %d: %v", f, i, err)
			}
			docs = append(docs, doc{source: fmt.Sprintf("%s:%d", filepath.Base(f), i), kind: meta.Kind, json: j})
		}
	}
	return docs
}

func newObject(t testing.TB, kind string) runtime.Object {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1alpha2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	obj, err := scheme.New(v1alpha2.SchemeGroupVersion.WithKind(kind))
	if err != nil {
		t.Fatalf("kind %q: %v", kind, err)
	}
	return obj
}

// Every example written for the OAM runtime decodes strictly (no unknown or misspelt field), and
// encoding the result gives back exactly what was written, apart from the empty status and creation
// timestamp every encoded object carries.
func TestOAMExamplesRoundTrip(t *testing.T) {
	kinds := map[string]int{}
	for _, d := range readDocs(t) {
		kinds[d.kind]++
		t.Run(d.source, func(t *testing.T) {
			obj := newObject(t, d.kind)
			if err := yaml.UnmarshalStrict(d.json, obj); err != nil {
				t.Fatalf("strict decode of %s: %v", d.kind, err)
			}
			out, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			var want, got map[string]any
			if err := json.Unmarshal(d.json, &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if s, ok := got["status"].(map[string]any); ok && len(s) == 0 {
				delete(got, "status")
			}
			if m, ok := got["metadata"].(map[string]any); ok && m["creationTimestamp"] == nil {
				delete(m, "creationTimestamp")
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round trip changed the object\n got: %s\nwant: %s", out, d.json)
			}
		})
	}
	for _, k := range []string{"ApplicationConfiguration", "Component", "TraitDefinition", "WorkloadDefinition"} {
		if kinds[k] == 0 {
			t.Errorf("testdata has no %s", k)
		}
	}
}

func decodeNamed[T any](t *testing.T, kind, name string) *T {
	t.Helper()
	for _, d := range readDocs(t) {
		if d.kind != kind {
			continue
		}
		obj := new(T)
		if err := yaml.UnmarshalStrict(d.json, obj); err != nil {
			t.Fatalf("%s: %v", d.source, err)
		}
		if reflect.ValueOf(obj).Elem().FieldByName("Name").String() == name {
			return obj
		}
	}
	t.Fatalf("no %s %s in testdata", kind, name)
	return nil
}

// The fields the hub renders from land where it will look for them.
func TestOAMExampleFieldsDecode(t *testing.T) {
	t.Run("AppConfig by componentName with parameter values and traits", func(t *testing.T) {
		ac := decodeNamed[v1alpha2.ApplicationConfiguration](t, "ApplicationConfiguration", "web-appconfig")
		if got := ac.Spec.Placement; got == nil || strings.Join(got.Clusters, ",") != "cluster1,cluster2" {
			t.Errorf("placement = %+v, want clusters cluster1,cluster2", got)
		}
		if len(ac.Spec.Components) != 1 {
			t.Fatalf("components = %d, want 1", len(ac.Spec.Components))
		}
		c := ac.Spec.Components[0]
		if c.ComponentName != "web" || c.RevisionName != "" {
			t.Errorf("componentName, revisionName = %q, %q", c.ComponentName, c.RevisionName)
		}
		// Values keep their JSON type: a string, a number, an object.
		want := map[string]string{"image": `"nginx:1.27"`, "replicas": `3`, "labels": `{"app":"web","tier":"frontend"}`}
		if len(c.ParameterValues) != len(want) {
			t.Errorf("parameterValues = %d, want %d", len(c.ParameterValues), len(want))
		}
		for _, pv := range c.ParameterValues {
			if string(pv.Value.Raw) != want[pv.Name] {
				t.Errorf("parameter %s = %s, want %s", pv.Name, pv.Value.Raw, want[pv.Name])
			}
		}
		if len(c.Traits) != 1 || !bytes.Contains(c.Traits[0].Trait.Raw, []byte(`"kind":"ManualScalerTrait"`)) {
			t.Errorf("traits = %+v, want one ManualScalerTrait", c.Traits)
		}
	})
	t.Run("AppConfig pinned by revisionName", func(t *testing.T) {
		ac := decodeNamed[v1alpha2.ApplicationConfiguration](t, "ApplicationConfiguration", "pinned-appconfig")
		if c := ac.Spec.Components[0]; c.RevisionName != "frontend-v1" || c.ComponentName != "" || len(c.Traits) != 1 {
			t.Errorf("component = %+v, want revisionName frontend-v1 with one trait", c)
		}
		if ac.Spec.Placement != nil {
			t.Errorf("placement = %+v, want none", ac.Spec.Placement)
		}
	})
	t.Run("Component with parameters", func(t *testing.T) {
		c := decodeNamed[v1alpha2.Component](t, "Component", "web")
		if len(c.Spec.Parameters) != 3 {
			t.Fatalf("parameters = %d, want 3", len(c.Spec.Parameters))
		}
		p := c.Spec.Parameters[0]
		if p.Name != "image" || !p.Required || p.Description == "" ||
			strings.Join(p.FieldPaths, ",") != "spec.template.spec.containers[0].image" {
			t.Errorf("parameter 0 = %+v", p)
		}
		if c.Spec.Parameters[1].Required {
			t.Errorf("parameter replicas is required, want optional")
		}
		var w struct{ APIVersion, Kind string }
		if err := json.Unmarshal(c.Spec.Workload.Raw, &w); err != nil || w.APIVersion != "apps/v1" || w.Kind != "Deployment" {
			t.Errorf("workload = %s (%v), want an apps/v1 Deployment", c.Spec.Workload.Raw, err)
		}
	})
	t.Run("TraitDefinitions", func(t *testing.T) {
		rollout := decodeNamed[v1alpha2.TraitDefinition](t, "TraitDefinition", "rollouts.core.oam.dev")
		if !rollout.Spec.RevisionEnabled || rollout.Spec.Patch || rollout.Spec.Reference.Name != "rollouts.core.oam.dev" {
			t.Errorf("rollouts = %+v, want revisionEnabled, not patch", rollout.Spec)
		}
		patch := decodeNamed[v1alpha2.TraitDefinition](t, "TraitDefinition", "nodeselectors.extended.oam.dev")
		if !patch.Spec.Patch || patch.Spec.RevisionEnabled ||
			strings.Join(patch.Spec.AppliesToWorkloads, ",") != "core.oam.dev/v1alpha2.ContainerizedWorkload" {
			t.Errorf("nodeselectors = %+v, want a patch trait for ContainerizedWorkloads", patch.Spec)
		}
		scaler := decodeNamed[v1alpha2.TraitDefinition](t, "TraitDefinition", "manualscalertraits.core.oam.dev")
		if scaler.Spec.WorkloadRefPath != "spec.workloadRef" {
			t.Errorf("manualscalertraits workloadRefPath = %q, want spec.workloadRef", scaler.Spec.WorkloadRefPath)
		}
	})
}

// A misspelt field is an error, not silently dropped: the strict decode above means something.
func TestStrictDecodeRejectsUnknownFields(t *testing.T) {
	bad := `{"apiVersion":"core.oam.dev/v1alpha2","kind":"ApplicationConfiguration","metadata":{"name":"x"},
		"spec":{"components":[{"componentName":"c","parameterValue":[]}]}}`
	err := yaml.UnmarshalStrict([]byte(bad), &v1alpha2.ApplicationConfiguration{})
	if err == nil || !strings.Contains(err.Error(), "parameterValue") {
		t.Errorf("decode with a misspelt field: err = %v, want one naming parameterValue", err)
	}
}

// The generated deep copy shares no memory with the original.
func TestDeepCopyIsIndependent(t *testing.T) {
	ac := decodeNamed[v1alpha2.ApplicationConfiguration](t, "ApplicationConfiguration", "web-appconfig")
	cp := ac.DeepCopy()
	cp.Spec.Components[0].ParameterValues[0].Value.Raw[0] = 'X'
	cp.Spec.Placement.Clusters[0] = "other"
	if ac.Spec.Components[0].ParameterValues[0].Value.Raw[0] == 'X' || ac.Spec.Placement.Clusters[0] != "cluster1" {
		t.Error("modifying the copy modified the original")
	}
}
