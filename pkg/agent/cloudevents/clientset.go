package cloudevents

import (
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	workclientset "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1client "open-cluster-management.io/api/client/work/clientset/versioned/typed/work/v1"
	workv1alpha1client "open-cluster-management.io/api/client/work/clientset/versioned/typed/work/v1alpha1"
	agentclient "open-cluster-management.io/sdk-go/pkg/cloudevents/clients/work/agent/client"
)

// clientset is a work clientset whose only client is the ManifestWorks of one cluster, over a cloudevents
// source: what the agent reads and writes of the hub. The rest is nil, as in sdk-go's own wrapper (which
// is internal to it).
type clientset struct {
	works *agentclient.ManifestWorkAgentClient
}

var (
	_ workclientset.Interface      = &clientset{}
	_ workv1client.WorkV1Interface = &workV1{}
)

func (c *clientset) WorkV1() workv1client.WorkV1Interface                   { return &workV1{works: c.works} }
func (c *clientset) WorkV1alpha1() workv1alpha1client.WorkV1alpha1Interface { return nil }
func (c *clientset) Discovery() discovery.DiscoveryInterface                { return nil }

type workV1 struct {
	works *agentclient.ManifestWorkAgentClient
}

// ManifestWorks returns the cluster's works, whatever namespace is asked for: the source serves one
// cluster's, and the agent asks for those only.
func (c *workV1) ManifestWorks(namespace string) workv1client.ManifestWorkInterface {
	c.works.SetNamespace(namespace)
	return c.works
}

func (c *workV1) AppliedManifestWorks() workv1client.AppliedManifestWorkInterface { return nil }
func (c *workV1) RESTClient() rest.Interface                                      { return nil }
