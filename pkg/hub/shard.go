package hub

import (
	"fmt"
	"hash/fnv"

	"k8s.io/apimachinery/pkg/types"
)

// Shard is the part of the hub's objects one ferry-hub process writes when several split the work
// (--shard-index, --shard-count): Index of Count. A Count of 0 or 1 is one unsharded hub that owns
// everything.
//
// An object belongs to the shard its key hashes to (fnv-1a, 32 bits, modulo Count). A hash needs no
// coordination between shards and nothing stored: every replica, restarted or new, computes the same
// split from the key alone, so two shards never both believe they own an AppConfig and never write the
// same ManifestWork. The keys are an AppConfig's and a Component's "<namespace>/<name>" and a
// ManagedCluster's name. An AppConfig and a Component of the same namespace and name share a shard.
//
// Changing Count moves ownership of most keys. Nothing is handed over: the new owner of an AppConfig
// finds the ManifestWorks the old owner wrote through their ferry.io/appconfig-* labels (the cache index
// the AppConfig reconciler lists them by), and takes them over as it would after a restart.
type Shard struct {
	Index int
	Count int
}

// Owns reports whether key belongs to this shard.
func (s Shard) Owns(key string) bool {
	if s.Count <= 1 {
		return true
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key)) // a hash.Hash never fails to write
	return int(h.Sum32()%uint32(s.Count)) == s.Index
}

// ownsObject reports whether the object of a reconcile request belongs to this shard: a namespaced
// object by "<namespace>/<name>", a cluster-scoped one by its name.
func (s Shard) ownsObject(n types.NamespacedName) bool {
	if n.Namespace == "" {
		return s.Owns(n.Name)
	}
	return s.Owns(n.Namespace + "/" + n.Name)
}

// LeaderElectionID is the Lease the replicas of this shard elect their leader by. An unsharded hub
// keeps the name it always had, so that an upgrade of an existing install elects against the old
// replicas; each shard has its own, so that the shards run at once.
func (s Shard) LeaderElectionID() string {
	if s.Count <= 1 {
		return "ferry-hub"
	}
	return fmt.Sprintf("ferry-hub-shard-%d-of-%d", s.Index, s.Count)
}

// String is how the shard shows in logs: "0/1" for an unsharded hub.
func (s Shard) String() string {
	return fmt.Sprintf("%d/%d", s.Index, max(s.Count, 1))
}

// validate checks the shard, naming the flags of a wrong one.
func (s Shard) validate() error {
	if s.Count < 1 {
		return fmt.Errorf("--shard-count %d: want at least 1", s.Count)
	}
	if s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("--shard-index %d: want 0 to %d, one less than --shard-count %d", s.Index, s.Count-1, s.Count)
	}
	return nil
}
