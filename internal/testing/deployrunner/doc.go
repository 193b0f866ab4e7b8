// Package deployrunner runs Ferry's binaries on this machine the way deploy/ runs them in a cluster, so
// that what `make local-up` and the end-to-end tests exercise is what ships. The entry point is
// Render: it renders a kustomization of deploy/ with `kubectl kustomize` and finds its Deployment.
// Install.ApplyTo then applies everything else the kustomization holds (namespace, ServiceAccount,
// RBAC, leader-election Role, CRDs) to a cluster, ServiceAccountKubeconfig gives the process the
// Deployment's ServiceAccount as its identity, and Install.Command builds the command of a local
// binary from the Deployment's container — its args with $(VAR) expanded as the kubelet does, its
// env, and a short, explicit list of Overrides for what differs between a process on this machine and
// a pod (bind addresses, see LoopbackServers; kubeconfigs; mount paths). Running the command is
// internal/testing/childproc's part. InstallHub and Hub.Command do all of it for ferry-hub on a local hub.
package deployrunner
