package hub

import (
	"encoding/json"
	"fmt"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

// A status patch takes the stored status to the new one exactly, tests the resourceVersion it was
// computed at, and changes a list element by element: when the first of 20 listed clusters heals and a
// 21st takes its place, it sends one cluster, not 20.
func TestStatusPatchChangesWhatChanged(t *testing.T) {
	cluster := func(i int) map[string]any {
		return map[string]any{"name": fmt.Sprintf("cluster-%04d", i), "applied": "True", "health": "Degraded",
			"manifests": []any{map[string]any{"ordinal": 0, "kind": "Deployment", "name": "web", "health": "Degraded",
				"conditions": []any{map[string]any{"type": "Degraded", "status": "True", "message": "0 of 3 replicas available"}}}}}
	}
	listed := func(from, to int) []any {
		var out []any
		for i := from; i < to; i++ {
			out = append(out, cluster(i))
		}
		return out
	}
	status := func(clusters []any, healthy int, extra map[string]any) map[string]any {
		s := map[string]any{"summary": map[string]any{"clusters": 1000, "healthy": fmt.Sprintf("%d/1000", healthy)},
			"clusters": clusters, "omittedClusters": 100 - len(clusters), "conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
		for k, v := range extra {
			s[k] = v
		}
		return s
	}
	for _, c := range []struct {
		name     string
		was, now map[string]any
		// most is the most bytes the patch may take.
		most int
	}{
		{"the first listed cluster healed, the 21st listed", status(listed(0, 20), 900, nil), status(listed(1, 21), 901, nil), 700},
		{"five more clusters degraded: copies of their neighbours, renamed", status(listed(0, 5), 995, nil), status(listed(0, 10), 990, nil), 950},
		{"a cluster listed first: a copy of the one after it", status(listed(1, 20), 900, nil), status(listed(0, 20), 899, nil), 350},
		{"a listed cluster changed", status(listed(0, 20), 900, nil), status(append(listed(0, 5), append([]any{map[string]any{"name": "cluster-0005"}}, listed(6, 20)...)...), 900, nil), 700},
		{"a count moved", status(listed(0, 20), 900, nil), status(listed(0, 20), 899, nil), 250},
		{"the list emptied", status(listed(0, 20), 900, nil), status(nil, 1000, nil), 300},
		{"first status", map[string]any{}, status(listed(0, 3), 997, nil), 3000},
		{"a field gone, one new, keys to escape", status(nil, 1, map[string]any{"drift": map[string]any{"a/b~c": 1}}), status(nil, 1, map[string]any{"rollout": map[string]any{"x": "y"}}), 300},
		{"the list reordered", status(listed(0, 3), 1, nil), status([]any{cluster(2), cluster(0), cluster(1)}, 1, nil), 3000},
	} {
		t.Run(c.name, func(t *testing.T) {
			was, _ := json.Marshal(c.was)
			now, _ := json.Marshal(c.now)
			patch, err := computeStatusPatch("42", was, now)
			if err != nil {
				t.Fatal(err)
			}
			if len(patch) > c.most {
				t.Errorf("the patch takes %d bytes, want at most %d: %s", len(patch), c.most, patch)
			}
			doc := func(status []byte, rv string) []byte {
				return []byte(fmt.Sprintf(`{"metadata":{"resourceVersion":%q},"status":%s}`, rv, status))
			}
			p, err := jsonpatch.DecodePatch(patch)
			if err != nil {
				t.Fatalf("%s: %v", patch, err)
			}
			got, err := p.Apply(doc(was, "42"))
			if err != nil {
				t.Fatalf("applying %s: %v", patch, err)
			}
			if !jsonpatch.Equal(got, doc(now, "42")) {
				t.Errorf("the patch %s makes\n%s\nwant\n%s", patch, got, doc(now, "42"))
			}
			if len(c.was) == 0 {
				return // the first status is written whole, whatever is stored
			}
			if _, err := p.Apply(doc(was, "43")); err == nil {
				t.Errorf("the patch applied to the status at another resourceVersion")
			}
		})
	}
	if patch, err := computeStatusPatch("1", []byte(`{"a":[1,2]}`), []byte(`{"a":[1,2]}`)); err != nil || patch != nil {
		t.Errorf("a status unchanged: patch %s, %v; want none", patch, err)
	}
}
