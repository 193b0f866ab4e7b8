package agent

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// mappingCache keeps the mappings a REST mapper gave, by kind and version, until the mapper is reset.
// Every manifest of every apply asks for its kind's mapping, and client-go's discovery-backed mapper
// answers each time by walking the mappings of every group the spoke serves: about 14 KB of garbage per
// manifest, a tenth of what the agent allocated applying 1,000 works (BenchmarkShippedAgentMemory's
// profile). Between two resets the mapper answers a kind the same way, so the first answer is kept;
// crdTracker resets it whenever what the spoke serves changes, and the reset empties this cache too.
// Only found mappings are kept: a kind the mapper does not know is asked again (and may reset it).
type mappingCache struct {
	meta.ResettableRESTMapper

	mu    sync.RWMutex
	epoch uint64 // resets so far: a mapping read before a reset is not kept after it
	byGVK map[schema.GroupVersionKind]*meta.RESTMapping
}

func newMappingCache(mapper meta.ResettableRESTMapper) *mappingCache {
	return &mappingCache{ResettableRESTMapper: mapper, byGVK: map[schema.GroupVersionKind]*meta.RESTMapping{}}
}

// RESTMapping answers from the cache when asked for one version of a kind; callers must not change the
// mapping they are given (it is shared).
func (c *mappingCache) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) != 1 {
		return c.ResettableRESTMapper.RESTMapping(gk, versions...)
	}
	gvk := gk.WithVersion(versions[0])
	c.mu.RLock()
	m, ok := c.byGVK[gvk]
	epoch := c.epoch
	c.mu.RUnlock()
	if ok {
		return m, nil
	}
	m, err := c.ResettableRESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.epoch == epoch {
		c.byGVK[gvk] = m
	}
	c.mu.Unlock()
	return m, nil
}

// Reset resets the mapper and forgets every kept mapping. The mapper is reset first, under the lock: a
// mapping read at the new epoch is then one the reset mapper gave.
func (c *mappingCache) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ResettableRESTMapper.Reset()
	c.epoch++
	clear(c.byGVK)
}
