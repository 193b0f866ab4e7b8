package agent_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	workclientset "open-cluster-management.io/api/client/work/clientset/versioned"
)

// The hub writes a work whenever its spec or labels change, while the agent writes its status: the
// agent's status write carries no resourceVersion, so a hub write landing between the agent's read and
// its write never has it refused as stale (and retried with a backoff) — the status lands at once.
func TestStatusWriteIsNeverRefusedAfterAHubWrite(t *testing.T) {
	hub, err := workclientset.NewForConfig(testEnv(t).Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var statusWrites, refused int
	var cluster string
	interpose := func(c *agentSetup) {
		cluster = c.ClusterName
		hubCfg := rest.CopyConfig(c.Hub)
		hubCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				if req.Method == http.MethodGet || !strings.HasSuffix(req.URL.Path, "/status") {
					return rt.RoundTrip(req)
				}
				// Before each status write the hub changes the work: a label, as it does to move a
				// work between revisions of an application.
				parts := strings.Split(req.URL.Path, "/") // .../manifestworks/<name>/status
				name := parts[len(parts)-2]
				mu.Lock()
				statusWrites++
				n := statusWrites
				mu.Unlock()
				label := []byte(`{"metadata":{"labels":{"example.com/hub-write":"` + string(rune('a'+n%26)) + `"}}}`)
				if _, err := hub.WorkV1().ManifestWorks(cluster).Patch(context.Background(), name, types.MergePatchType, label, metav1.PatchOptions{}); err != nil {
					t.Errorf("hub write: %v", err)
				}
				resp, err := rt.RoundTrip(req)
				if err == nil && resp.StatusCode == http.StatusConflict {
					mu.Lock()
					refused++
					mu.Unlock()
				}
				return resp, err
			})
		})
		c.Hub = hubCfg
	}
	f := startAgent(t, interpose)
	w := f.create(f.work("racing", namespaceManifest, configMapA))
	f.waitWork(w.Name, "applied", allApplied)
	mu.Lock()
	defer mu.Unlock()
	if statusWrites == 0 {
		t.Fatal("no status write seen")
	}
	if refused != 0 {
		t.Errorf("%d of %d status writes were refused as stale after a hub write; want none", refused, statusWrites)
	}
}

// The agent writes an AppliedManifestWork's status (the resources it applied, an eviction mark) by a
// merge patch of the status subresource holding only the fields that change and the resourceVersion
// they were computed from: the work's reconciles and the eviction loop write the same object, and the
// one that read an older copy must lose rather than overwrite the other.
func TestAppliedWorkStatusIsPatchedOnlyAsRead(t *testing.T) {
	type statusWrite struct {
		method string
		body   map[string]any
	}
	var mu sync.Mutex
	var writes []statusWrite
	f := startAgent(t, func(c *agentSetup) {
		c.Spoke = rest.CopyConfig(c.Spoke)
		c.Spoke.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				if req.Method == http.MethodGet || !strings.Contains(req.URL.Path, "/appliedmanifestworks/") || !strings.HasSuffix(req.URL.Path, "/status") {
					return rt.RoundTrip(req)
				}
				w := statusWrite{method: req.Method}
				if req.GetBody != nil {
					if body, err := req.GetBody(); err == nil {
						_ = json.NewDecoder(body).Decode(&w.body)
						_ = body.Close()
					}
				}
				mu.Lock()
				writes = append(writes, w)
				mu.Unlock()
				return rt.RoundTrip(req)
			})
		})
	})
	f.create(f.work("recorded", namespaceManifest, configMapA))
	f.waitWork("recorded", "applied", allApplied)
	f.eventually("the applied resources recorded", func(ctx context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(writes) > 0, nil
	})
	mu.Lock()
	defer mu.Unlock()
	for _, w := range writes {
		meta, _ := w.body["metadata"].(map[string]any)
		status, _ := w.body["status"].(map[string]any)
		if w.method != http.MethodPatch || meta["resourceVersion"] == nil || len(w.body) != 2 || len(status) != 1 {
			t.Errorf("AppliedManifestWork status write %s %v; want a PATCH of one status field with metadata.resourceVersion", w.method, w.body)
		}
	}
}
