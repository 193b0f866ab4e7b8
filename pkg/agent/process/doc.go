// Package process is the ferry-agent process around the work controller of package agent: its options
// and flags (OCM's work agent's command line, the hub kubeconfig directory `clusteradm join` sets up),
// building the hub and spoke clients, the check that the hub answers, leader election on the spoke,
// new clients when the hub kubeconfig changes, the cluster's Lease on the hub, logs that say an API
// server is down in two lines rather than hundreds, and the servers (probes, metrics, pprof, OCM's
// HTTPS health port). Entry point: Run, with Options from NewOptions, completed and validated.
//
// Package agent holds the controllers and knows nothing of flags, files or servers: its entry point
// Start takes a resolved agent.Config. ferry-hub's process is controller-runtime's manager (leader
// election, probes and metrics served by it), so the two share those libraries, not code.
package process
