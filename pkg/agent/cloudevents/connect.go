package cloudevents

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"
	workclientset "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1 "open-cluster-management.io/api/work/v1"
	"open-cluster-management.io/sdk-go/pkg/cloudevents/clients/statushash"
	"open-cluster-management.io/sdk-go/pkg/cloudevents/clients/store"
	agentclient "open-cluster-management.io/sdk-go/pkg/cloudevents/clients/work/agent/client"
	"open-cluster-management.io/sdk-go/pkg/cloudevents/clients/work/agent/codec"
	workstore "open-cluster-management.io/sdk-go/pkg/cloudevents/clients/work/store"
	"open-cluster-management.io/sdk-go/pkg/cloudevents/generic"
	"open-cluster-management.io/sdk-go/pkg/cloudevents/generic/clients"
	"open-cluster-management.io/sdk-go/pkg/cloudevents/generic/options"
	grpcoptions "open-cluster-management.io/sdk-go/pkg/cloudevents/generic/options/grpc"
	mqttoptions "open-cluster-management.io/sdk-go/pkg/cloudevents/generic/options/mqtt"
	mqttv2 "open-cluster-management.io/sdk-go/pkg/cloudevents/generic/options/v2/mqtt"
	"open-cluster-management.io/sdk-go/pkg/cloudevents/generic/types"
)

// The drivers of --workload-source-driver this package speaks.
const (
	DriverGRPC = "grpc"
	DriverMQTT = "mqtt"
)

// Options say which source to connect to, and as whom.
type Options struct {
	// Driver is DriverGRPC or DriverMQTT.
	Driver string
	// ConfigFile is the driver's configuration, as OCM's work agent reads it (--workload-source-config).
	ConfigFile string
	// ClusterName is the managed cluster whose works are taken.
	ClusterName string
	// ClientID names this agent to the source (--cloudevents-client-id).
	ClientID string
}

// Connect subscribes to the works of o.ClusterName at the source o names and returns a work clientset
// over them, and the source's host: the gRPC server's URL or the MQTT broker's host, which names the hub
// in the AppliedManifestWorks' names as OCM's agent names it. The subscription lives until ctx is done;
// a lost connection is made again with backoff, and a resync asks the source for every work again.
func Connect(ctx context.Context, o Options) (workclientset.Interface, string, error) {
	if o.ClusterName == "" || o.ClientID == "" {
		return nil, "", fmt.Errorf("a cloudevents source needs the cluster name and a client ID")
	}
	agentOptions, host, err := agentOptionsFor(o)
	if err != nil {
		return nil, "", err
	}
	works := workstore.NewAgentInformerWatcherStore()
	client, err := clients.NewCloudEventAgentClient(ctx, agentOptions, store.NewAgentWatcherStoreLister(works),
		statushash.StatusHash, codec.NewManifestBundleCodec())
	if err != nil {
		return nil, "", fmt.Errorf("connect to the %s source at %s: %w", o.Driver, host, err)
	}
	client.Subscribe(ctx, works.HandleReceivedResource)
	go resyncOnSubscribe(ctx, client)
	return &clientset{works: agentclient.NewManifestWorkAgentClient(o.ClusterName, works, client)}, host, nil
}

// resyncOnSubscribe asks the source for every work of the cluster each time the subscription is made
// (again): what changed while the agent was not connected comes then, not at the source's next change.
func resyncOnSubscribe(ctx context.Context, client generic.CloudEventsClient[*workv1.ManifestWork]) {
	log := klog.FromContext(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-client.SubscribedChan():
			if err := client.Resync(ctx, types.SourceAll); err != nil {
				log.Error(err, "Asking the cloudevents source for every work again failed; the next reconnect asks again")
			}
		}
	}
}

// agentOptionsFor reads o's configuration file and returns the transport's options and the source's host.
func agentOptionsFor(o Options) (*options.CloudEventsAgentOptions, string, error) {
	switch o.Driver {
	case DriverGRPC:
		config, err := grpcoptions.BuildGRPCOptionsFromFlags(o.ConfigFile)
		if err != nil {
			return nil, "", fmt.Errorf("--workload-source-config %s: %w", o.ConfigFile, err)
		}
		return grpcAgentOptions(config, o.ClusterName, o.ClientID, codec.NewManifestBundleCodec().EventDataType()), config.Dialer.URL, nil
	case DriverMQTT:
		config, err := mqttoptions.BuildMQTTOptionsFromFlags(o.ConfigFile)
		if err != nil {
			return nil, "", fmt.Errorf("--workload-source-config %s: %w", o.ConfigFile, err)
		}
		return mqttv2.NewAgentOptions(config, o.ClusterName, o.ClientID), config.Dialer.BrokerHost, nil
	}
	return nil, "", fmt.Errorf("workload source driver %q: want %s or %s", o.Driver, DriverGRPC, DriverMQTT)
}
