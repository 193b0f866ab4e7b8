// Package e2e is the end-to-end suite: it runs the real ferry-hub and ferry-agent binaries as separate
// processes against a local hub and two spokes (or kind clusters given by their kubeconfigs) and drives
// them only through the Kubernetes API and the command lines, as a user does.
//
// Every test starts clusters and processes of its own, so the tests run in parallel, all at once unless
// go test's -parallel says otherwise (TestMain): much of an end-to-end test is waiting — for an outage
// to last, for a lease to run out, for a rollout to hold — and another test's work fills it.
//
// Its benchmarks (make bench) measure ferry-agent as deploy/ ships it (BenchmarkShippedAgentMemory), and
// over each transport beside OCM's own agent, through a restart of OCM's gRPC server and an outage of
// an MQTT broker (BenchmarkTransports).
package e2e
