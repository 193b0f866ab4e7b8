package apprevision

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// A revision reads back as it was recorded, overrides and all; one from before overrides reads back
// without them; a revision that is not one says which.
func TestDecodeReadsARevisionBackAsRecorded(t *testing.T) {
	recorded := Data{
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
			{RawExtension: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"shop"}}`)}}}}},
		RevisionEnabled: map[string]string{"web": "web-v2"},
		Overrides:       []v1alpha2.Override{{Name: "eu", Clusters: []string{"eu-1"}, Labels: map[string]string{"region": "eu"}}},
		SpecHash:        "abc",
	}
	raw, err := json.Marshal(recorded)
	if err != nil {
		t.Fatal(err)
	}
	rev := func(raw string) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "shop-abc"}, Data: runtime.RawExtension{Raw: []byte(raw)}}
	}
	got, err := Decode(rev(string(raw)))
	if err != nil || !reflect.DeepEqual(*got, recorded) {
		t.Errorf("Decode = %+v, %v; want %+v", got, err, recorded)
	}
	old, err := Decode(rev(`{"spec":{"workload":{}}}`))
	if err != nil || old.Overrides != nil || old.SpecHash != "" {
		t.Errorf("a revision from before overrides: %+v, %v; want none", old, err)
	}
	if _, err := Decode(rev(`[1]`)); err == nil || !strings.Contains(err.Error(), "application revision shop-abc") {
		t.Errorf("Decode of a list: %v, want an error naming the revision", err)
	}
}
