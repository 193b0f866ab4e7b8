package cloudevents

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	workclientset "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1client "open-cluster-management.io/api/client/work/clientset/versioned/typed/work/v1"
	workv1alpha1client "open-cluster-management.io/api/client/work/clientset/versioned/typed/work/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
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
	return ownCopies{c.works}
}

// ownCopies is sdk-go's client of works with every work it gives the caller copied: sdk-go hands out
// the very objects its own store keeps, and the agent changes what it is given (its informer's
// transform and its write-through cache compact what they keep) while sdk-go reads them: a data race,
// and sdk-go's store changed behind its back.
type ownCopies struct {
	*agentclient.ManifestWorkAgentClient
}

func (c ownCopies) Get(ctx context.Context, name string, opts metav1.GetOptions) (*workv1.ManifestWork, error) {
	w, err := c.ManifestWorkAgentClient.Get(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	return w.DeepCopy(), nil
}

func (c ownCopies) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*workv1.ManifestWork, error) {
	w, err := c.ManifestWorkAgentClient.Patch(ctx, name, pt, data, opts, subresources...)
	if err != nil {
		return nil, err
	}
	return w.DeepCopy(), nil
}

func (c ownCopies) List(ctx context.Context, opts metav1.ListOptions) (*workv1.ManifestWorkList, error) {
	list, err := c.ManifestWorkAgentClient.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	return list.DeepCopy(), nil
}

func (c ownCopies) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := c.ManifestWorkAgentClient.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		if e.Object != nil {
			e.Object = e.Object.DeepCopyObject()
		}
		return e, true
	}), nil
}

func (c *workV1) AppliedManifestWorks() workv1client.AppliedManifestWorkInterface { return nil }
func (c *workV1) RESTClient() rest.Interface                                      { return nil }
