package agent

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper is a real DefaultRESTMapper that counts the mappings asked of it, and can run something
// in the middle of an answer.
type countingMapper struct {
	*meta.DefaultRESTMapper
	asked, resets int
	during        func()
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.asked++
	if m.during != nil {
		m.during()
	}
	return m.DefaultRESTMapper.RESTMapping(gk, versions...)
}

func (m *countingMapper) Reset() { m.resets++ }

// A kind's mapping is asked of the mapper once until the mapper is reset; a kind it does not know is
// asked again each time; a mapping read while the mapper was being reset is not kept.
func TestMappingCacheAsksTheMapperOncePerReset(t *testing.T) {
	apps := schema.GroupVersion{Group: "apps", Version: "v1"}
	delegate := &countingMapper{DefaultRESTMapper: meta.NewDefaultRESTMapper([]schema.GroupVersion{apps})}
	delegate.Add(apps.WithKind("Deployment"), meta.RESTScopeNamespace)
	c := newMappingCache(delegate)
	deployments := schema.GroupKind{Group: "apps", Kind: "Deployment"}

	for range 3 {
		m, err := c.RESTMapping(deployments, "v1")
		if err != nil || m.Resource.Resource != "deployments" {
			t.Fatalf("mapping %v, %v", m, err)
		}
	}
	if delegate.asked != 1 {
		t.Errorf("the mapper was asked %d times for one kind, want once", delegate.asked)
	}

	c.Reset()
	if _, err := c.RESTMapping(deployments, "v1"); err != nil || delegate.asked != 2 || delegate.resets != 1 {
		t.Errorf("after a reset the mapper was asked %d times (reset %d times), want 2 (1): %v", delegate.asked, delegate.resets, err)
	}

	unknown := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	for range 2 {
		if _, err := c.RESTMapping(unknown, "v1"); !meta.IsNoMatchError(err) {
			t.Fatalf("an unknown kind: %v, want a no-match error", err)
		}
	}
	if delegate.asked != 4 {
		t.Errorf("an unknown kind asked twice reached the mapper %d times in all, want 4", delegate.asked)
	}

	c.Reset()
	delegate.during = c.Reset // the spoke's kinds change while the mapper answers
	if _, err := c.RESTMapping(deployments, "v1"); err != nil {
		t.Fatal(err)
	}
	delegate.during = nil
	if _, err := c.RESTMapping(deployments, "v1"); err != nil || delegate.asked != 6 {
		t.Errorf("a mapping read across a reset was kept: the mapper was asked %d times in all, want 6 (%v)", delegate.asked, err)
	}
	if _, err := c.RESTMapping(deployments, "v1"); err != nil || delegate.asked != 6 {
		t.Errorf("the mapping read after the reset was not kept: asked %d times, want 6 (%v)", delegate.asked, err)
	}
}
