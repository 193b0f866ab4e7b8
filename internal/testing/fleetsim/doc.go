// Package fleetsim puts a simulated fleet of managed clusters on a real hub, for benchmarks that run
// ferry-hub against thousands of clusters without running thousands of agents. RegisterClusters is
// the entry point: it registers N ManagedClusters, labelled so that an AppConfig's clusterSelector
// picks them (and, given ClusterSets, spread over exclusive ManagedClusterSets); BindClusterSets binds
// sets to the namespaces of the AppConfigs, as Open Cluster Management's tenancy asks. A WorkTracker
// then follows every ManifestWork the hub writes (slimmed to what an agent needs), Agents write each
// work's status as ferry-agent writes it — healthy or degraded, rate limited — a Responder has them
// answer every generation the hub writes, as agents do, and an AppConfigWatcher records each
// AppConfig's summary and rollout as they change, from which Lags computes how long the hub took to
// show each status write. Sampler (peak RSS and CPU time of a process, from /proc) and ScrapeMetrics
// (a controller's Prometheus metrics: API writes, work queues) measure what the hub spends.
package fleetsim
