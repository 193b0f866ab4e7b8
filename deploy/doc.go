// Package deploy holds the kustomize install of Ferry: deploy/hub for the hub cluster,
// deploy/agent/spoke for a managed cluster, deploy/agent/clusteradm for a managed cluster joined
// with `clusteradm join`, and deploy/agent/cloudevents/grpc and mqtt for a managed cluster whose works
// come over gRPC or MQTT. Its one export, AgentHubClusterRole, is the agent's hub ClusterRole for
// `ferry-hub clusters add`. Its tests render every kustomization with `kubectl kustomize`,
// apply the result with a server-side dry run to real API servers of internal/testing/localcluster, and hold
// the Deployments to the security and wiring promises deploy/README.md makes.
package deploy
