package agent

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-mc/ferry/pkg/workload"
)

func TestRejectConflictingDuplicatesFailsTheLaterOfTwoDifferentManifestsOfOneObject(t *testing.T) {
	cm := func(namespace, name, value string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": namespace}, "data": map[string]any{"k": value}}}
	}
	ms := []workload.Manifest{
		{Ordinal: 0, Object: cm("ns", "a", "1")},
		{Ordinal: 1, Object: cm("ns", "a", "1")},     // an identical copy: applies as one
		{Ordinal: 2, Object: cm("ns", "a", "other")}, // clashes with 0
		{Ordinal: 3, Object: cm("other-ns", "a", "other")},
		{Ordinal: 4, DecodeErr: errFake},
	}
	got := rejectConflictingDuplicates(ms)
	for _, i := range []int{0, 1, 3} {
		if got[i].DecodeErr != nil {
			t.Errorf("manifest %d rejected: %v", i, got[i].DecodeErr)
		}
	}
	if err := got[2].DecodeErr; err == nil || !strings.Contains(err.Error(), "ConfigMap ns/a, as manifest 0 does") {
		t.Errorf("manifest 2: %v, want it rejected, naming the object and manifest 0", err)
	}
	if got[4].DecodeErr != errFake {
		t.Errorf("manifest 4: %v, want its own decode error kept", got[4].DecodeErr)
	}
}

var errFake = &fakeError{}

type fakeError struct{}

func (*fakeError) Error() string { return "fake" }
