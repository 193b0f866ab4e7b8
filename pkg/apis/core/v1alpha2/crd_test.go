package v1alpha2_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

const namespace = "default"

// resources maps each kind to its resource and whether it is namespaced.
var resources = map[string]struct {
	resource   string
	namespaced bool
}{
	"ApplicationConfiguration": {"applicationconfigurations", true},
	"Component":                {"components", true},
	"TraitDefinition":          {"traitdefinitions", false},
	"WorkloadDefinition":       {"workloaddefinitions", false},
}

func resourceFor(t testing.TB, dyn dynamic.Interface, kind string) dynamic.ResourceInterface {
	t.Helper()
	r, ok := resources[kind]
	if !ok {
		t.Fatalf("unknown kind %q", kind)
	}
	ri := dyn.Resource(v1alpha2.SchemeGroupVersion.WithResource(r.resource))
	if r.namespaced {
		return ri.Namespace(namespace)
	}
	return ri
}

// The generated CRDs, installed in a real hub API server, accept the seeds' YAML unchanged, keep every
// field of it (nothing pruned from embedded workloads and traits), print the columns a person wants, and
// reject what the validation rules forbid.
func TestCRDsOnARealAPIServer(t *testing.T) {
	env := localcluster.StartForTest(t, localcluster.Options{})
	cfg := env.Hub.Config
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("seed objects are stored unchanged", func(t *testing.T) {
		for _, d := range readDocs(t) {
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(d.json); err != nil {
				t.Fatalf("%s: %v", d.source, err)
			}
			ri := resourceFor(t, dyn, d.kind)
			if _, err := ri.Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
				t.Errorf("%s: create %s %s: %v", d.source, d.kind, obj.GetName(), err)
				continue
			}
			got, err := ri.Get(t.Context(), obj.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Errorf("%s: read back: %v", d.source, err)
				continue
			}
			if !reflect.DeepEqual(got.Object["spec"], obj.Object["spec"]) {
				t.Errorf("%s: stored spec differs from the one written\n got: %v\nwant: %v", d.source, got.Object["spec"], obj.Object["spec"])
			}
		}
	})

	t.Run("printer columns, short names and categories", func(t *testing.T) {
		cs, err := apiextensionsclient.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]struct {
			columns   []string
			shortName string
		}{
			"applicationconfigurations": {[]string{"CLUSTERS", "APPLIED", "AVAILABLE", "HEALTHY", "AGE", "REFUSED", "DRIFTED"}, "appconfig"},
			"components":                {[]string{"WORKLOAD-KIND", "LATEST-REVISION", "AGE"}, "comp"},
			"traitdefinitions":          {[]string{"DEFINITION-NAME", "REVISION-ENABLED", "PATCH", "AGE"}, "trait"},
			"workloaddefinitions":       {[]string{"DEFINITION-NAME", "AGE"}, "workload"},
		}
		for plural, w := range want {
			crd, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), plural+"."+v1alpha2.GroupName, metav1.GetOptions{})
			if err != nil {
				t.Errorf("CRD %s: %v", plural, err)
				continue
			}
			if !established(crd) {
				t.Errorf("CRD %s is not established", plural)
			}
			var cols []string
			for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
				cols = append(cols, c.Name)
			}
			if !slices.Equal(cols, w.columns) {
				t.Errorf("%s printer columns = %v, want %v", plural, cols, w.columns)
			}
			if !slices.Equal(crd.Spec.Names.ShortNames, []string{w.shortName}) || !slices.Equal(crd.Spec.Names.Categories, []string{"oam"}) {
				t.Errorf("%s short names %v, categories %v; want [%s], [oam]", plural, crd.Spec.Names.ShortNames, crd.Spec.Names.Categories, w.shortName)
			}
		}
	})

	t.Run("kubectl get shows the AppConfig's cluster summary and drift", func(t *testing.T) {
		ri := resourceFor(t, dyn, "ApplicationConfiguration")
		ac, err := ri.Get(t.Context(), "web-appconfig", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		summary := map[string]any{"clusters": int64(2), "applied": "2/2", "available": "1/2"}
		if err := unstructured.SetNestedMap(ac.Object, summary, "status", "summary"); err != nil {
			t.Fatal(err)
		}
		drift := map[string]any{"clusters": int64(1), "objects": int64(3)}
		if err := unstructured.SetNestedMap(ac.Object, drift, "status", "drift"); err != nil {
			t.Fatal(err)
		}
		if _, err := ri.UpdateStatus(t.Context(), ac, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update status: %v", err)
		}
		table := getTable(t, cfg, "/apis/core.oam.dev/v1alpha2/namespaces/"+namespace+"/applicationconfigurations/web-appconfig")
		row := map[string]any{}
		for i, c := range table.ColumnDefinitions {
			row[c.Name] = table.Rows[0].Cells[i]
		}
		for col, want := range map[string]any{"Name": "web-appconfig", "CLUSTERS": float64(2), "APPLIED": "2/2", "AVAILABLE": "1/2", "DRIFTED": float64(1)} {
			if row[col] != want {
				t.Errorf("column %s = %v, want %v (row %v)", col, row[col], want, row)
			}
		}
	})

	t.Run("validation rules", func(t *testing.T) {
		ri := resourceFor(t, dyn, "ApplicationConfiguration")
		cases := []struct {
			name, spec, wantErr string
		}{
			{"two placement forms", `{"placement":{"clusters":["c1"],"clusterSelector":{"matchLabels":{"env":"prod"}}}}`,
				"set exactly one of clusters, clusterSelector and placementRef"},
			{"no placement form", `{"placement":{}}`, "set exactly one of clusters, clusterSelector and placementRef"},
			{"componentName and revisionName", `{"components":[{"componentName":"frontend","revisionName":"frontend-v1"}]}`,
				"set exactly one of componentName and revisionName"},
			{"neither componentName nor revisionName", `{"components":[{"traits":[]}]}`,
				"set exactly one of componentName and revisionName"},
			{"placement by selector", `{"placement":{"clusterSelector":{"matchLabels":{"env":"prod"}}}}`, ""},
			{"placement by Placement", `{"placement":{"placementRef":{"name":"all"}},"components":[{"revisionName":"frontend-v1"}]}`, ""},
		}
		for i, c := range cases {
			obj := &unstructured.Unstructured{}
			doc := fmt.Sprintf(`{"apiVersion":"core.oam.dev/v1alpha2","kind":"ApplicationConfiguration","metadata":{"name":"rule-%d"},"spec":%s}`, i, c.spec)
			if err := json.Unmarshal([]byte(doc), &obj.Object); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			_, err := ri.Create(t.Context(), obj, metav1.CreateOptions{})
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("%s: rejected: %v", c.name, err)
			case c.wantErr != "" && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("%s: err = %v, want Invalid with %q", c.name, err, c.wantErr)
			}
		}
	})
}

// getTable reads path the way kubectl get does: as a server-side Table built from the printer columns.
func getTable(t *testing.T, cfg *rest.Config, path string) *metav1.Table {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("get %s as a table: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("get %s as a table: %s %s (%v)", path, resp.Status, body, err)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(body, table); err != nil {
		t.Fatalf("decode table: %v", err)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("table has %d rows, want 1", len(table.Rows))
	}
	return table
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
