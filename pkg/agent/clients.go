package agent

import (
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	workclientset "open-cluster-management.io/api/client/work/clientset/versioned"
)

// Clients are the API clients the agent works through. Its process (pkg/agent/process) builds them from
// the hub and spoke configurations it was given, so that what carries the works from the hub is its
// choice: the agent only reads, watches and patches ManifestWorks through HubWorks.
type Clients struct {
	// HubWorks reaches the ManifestWorks of the cluster namespace on the hub.
	HubWorks workclientset.Interface
	// HubHost names the hub: the agent's AppliedManifestWorks are named after its hash (HubHash).
	HubHost string

	// Spoke is the managed cluster's configuration: the clients of a work's executor are built from it.
	Spoke          *rest.Config
	SpokeWorks     workclientset.Interface
	SpokeDynamic   dynamic.Interface
	SpokeMetadata  metadata.Interface
	SpokeDiscovery discovery.DiscoveryInterface
	SpokeKube      kubernetes.Interface
}
