package process

import "k8s.io/client-go/rest"

// Test seams for the package's external tests.

// SetWrapConfig makes every client configuration of the agent run from o pass through fn first: role
// is "hub" or "spoke".
func SetWrapConfig(o *Options, fn func(role string, cfg *rest.Config)) { o.wrapConfig = fn }

// KeepLeaseOnStop makes the agent run from o leave its Lease held when it stops, as a killed process
// does.
func KeepLeaseOnStop(o *Options) { o.keepLeaseOnStop = true }
