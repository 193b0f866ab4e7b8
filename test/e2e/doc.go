// Package e2e is the end-to-end suite: it runs the real ferry-hub and ferry-agent binaries as separate
// processes against a local hub and two spokes (or kind clusters given by their kubeconfigs) and drives
// them only through the Kubernetes API and the command lines, as a user does.
package e2e
