package agent

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRejectConflictingDuplicatesFailsTheLaterOfTwoDifferentManifestsOfOneObject(t *testing.T) {
	cm := func(namespace, name, value string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": namespace}, "data": map[string]any{"k": value}}}
	}
	ms := []manifest{
		{ordinal: 0, obj: cm("ns", "a", "1")},
		{ordinal: 1, obj: cm("ns", "a", "1")},     // an identical copy: applies as one
		{ordinal: 2, obj: cm("ns", "a", "other")}, // clashes with 0
		{ordinal: 3, obj: cm("other-ns", "a", "other")},
		{ordinal: 4, decodeErr: errFake},
	}
	got := rejectConflictingDuplicates(ms)
	for _, i := range []int{0, 1, 3} {
		if got[i].decodeErr != nil {
			t.Errorf("manifest %d rejected: %v", i, got[i].decodeErr)
		}
	}
	if err := got[2].decodeErr; err == nil || !strings.Contains(err.Error(), "ConfigMap ns/a, as manifest 0 does") {
		t.Errorf("manifest 2: %v, want it rejected, naming the object and manifest 0", err)
	}
	if got[4].decodeErr != errFake {
		t.Errorf("manifest 4: %v, want its own decode error kept", got[4].decodeErr)
	}
}

var errFake = &fakeError{}

type fakeError struct{}

func (*fakeError) Error() string { return "fake" }
