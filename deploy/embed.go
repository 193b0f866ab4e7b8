package deploy

import _ "embed"

// AgentHubClusterRole is agent/hub-clusterrole.yaml: what an agent's hub credential may do in its
// cluster's namespace. `ferry-hub clusters add` makes sure the hub has it before binding a new
// cluster's credential to it, so the binding never names a role the hub lacks.
//
//go:embed agent/hub-clusterrole.yaml
var AgentHubClusterRole []byte
