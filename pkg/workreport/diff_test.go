package workreport_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-mc/ferry/pkg/workreport"
)

func TestDiffMessageReadsBack(t *testing.T) {
	long := strings.Repeat("ä", 100)
	for _, d := range []workreport.Diff{
		{Create: true},
		{},
		{Fields: []workreport.FieldChange{{Path: ".spec.replicas", Live: "3", Want: "5"}}},
		{Fields: []workreport.FieldChange{
			{Path: ".spec.template.spec.containers[0].image", Live: workreport.DiffValue("nginx:1.25; → x"), Want: workreport.DiffValue("nginx:1.26")},
			{Path: ".metadata.labels[app.kubernetes.io/name]", Live: "null", Want: workreport.DiffValue(map[string]any{"a": []any{1, "b"}})},
			{Path: ".data", Live: workreport.HiddenValue, Want: workreport.HiddenValue},
			{Path: ".spec.long", Live: workreport.DiffValue(long), Want: workreport.DiffValue(nil)},
		}, MoreFields: 7},
	} {
		c := workreport.DiffCondition(d)
		got, ok := workreport.ReadDiff(&c)
		if !ok {
			t.Fatalf("ReadDiff(%q) = false", c.Message)
		}
		if diff := cmp.Diff(d, got); diff != "" {
			t.Errorf("%q read back differs (-want +got):\n%s", c.Message, diff)
		}
		if got.Changes() != (c.Status == "True") {
			t.Errorf("%q: Changes() = %v, status %s", c.Message, got.Changes(), c.Status)
		}
	}
	if v := workreport.DiffValue(long); len(v) > 100 || !strings.HasSuffix(v, `…"`) {
		t.Errorf("a long value is shown as %s", v)
	}
}
