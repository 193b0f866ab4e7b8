package worktest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	workv1 "open-cluster-management.io/api/work/v1"
	"open-cluster-management.io/sdk-go/pkg/cloudevents/clients/statushash"
	"open-cluster-management.io/sdk-go/pkg/cloudevents/clients/store"
	sourceclient "open-cluster-management.io/sdk-go/pkg/cloudevents/clients/work/source/client"
	sourcecodec "open-cluster-management.io/sdk-go/pkg/cloudevents/clients/work/source/codec"
	workstore "open-cluster-management.io/sdk-go/pkg/cloudevents/clients/work/store"
	"open-cluster-management.io/sdk-go/pkg/cloudevents/generic/clients"
	mqttoptions "open-cluster-management.io/sdk-go/pkg/cloudevents/generic/options/mqtt"
	mqttv2 "open-cluster-management.io/sdk-go/pkg/cloudevents/generic/options/v2/mqtt"
	"open-cluster-management.io/sdk-go/pkg/cloudevents/generic/types"

	"github.com/ferry-mc/ferry/internal/testing/childproc"
)

// Mosquitto is Debian's MQTT broker running for a test on a loopback port of its own. Kill takes it
// down as a crash would, and Restart brings it back on the same port, empty: it keeps no sessions
// (persistence false), so every client connects and subscribes anew.
type Mosquitto struct {
	*childproc.Process
	// Addr is the broker's host:port.
	Addr string
}

// StartMosquitto runs the broker (.ci/run installs the mosquitto package) until the test ends and
// returns it once it accepts connections; its log is in logDir.
func StartMosquitto(t testing.TB, logDir string) *Mosquitto {
	t.Helper()
	bin, err := exec.LookPath("mosquitto")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/mosquitto"); serr != nil {
			t.Fatalf("no mosquitto MQTT broker on this machine (apt-get install mosquitto; .ci/run installs it): %v", err)
		}
		bin = "/usr/sbin/mosquitto"
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	conf := filepath.Join(t.TempDir(), "mosquitto.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\n", port)), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := childproc.Start(exec.Command(bin, "-c", conf), "mosquitto", filepath.Join(logDir, "mosquitto.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(5 * time.Second) })
	m := &Mosquitto{Process: p, Addr: fmt.Sprintf("127.0.0.1:%d", port)}
	WaitListening(t, "mosquitto", m.Addr)
	return m
}

// WriteMQTTConfig writes, in dir, the configuration of an agent (--workload-source-config) and of a
// source that speak through the broker at addr under sourceID's topics, as Maestro lays them out, and
// returns its path.
func WriteMQTTConfig(t testing.TB, dir, addr, sourceID string) string {
	t.Helper()
	path := filepath.Join(dir, "mqtt-config.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`brokerHost: %s
topics:
  sourceEvents: sources/%s/clusters/+/sourceevents
  agentEvents: sources/%s/clusters/+/agentevents
`, addr, sourceID, sourceID)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// MQTTSource is a source of works over an MQTT broker, as Maestro is: sdk-go's source client with the
// manifestbundles codec, publishing the works of a cluster and keeping their status as the agent
// reports it. Each time it subscribes (again, after a lost connection) it asks the agents for every
// status.
type MQTTSource struct {
	// Works publishes the cluster's works and reads them back with their status.
	Works *sourceclient.ManifestWorkSourceClient
	// Store is where the source keeps its works, as Maestro keeps them in its database: what the
	// agent's resync is answered from.
	Store *workstore.SourceLocalWatcherStore

	mu         sync.Mutex
	subscribed []time.Time
}

// StartMQTTSource connects a source to the broker config names, as sourceID, for the works of cluster,
// until ctx is done.
func StartMQTTSource(ctx context.Context, t testing.TB, config, sourceID, cluster string) *MQTTSource {
	t.Helper()
	opts, err := mqttoptions.BuildMQTTOptionsFromFlags(config)
	if err != nil {
		t.Fatal(err)
	}
	local, err := workstore.NewSourceLocalWatcherStore(ctx, func(context.Context) ([]*workv1.ManifestWork, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	client, err := clients.NewCloudEventSourceClient(ctx, mqttv2.NewSourceOptions(opts, sourceID+"-source", sourceID),
		store.NewSourceWatcherStoreLister(local), statushash.StatusHash, sourcecodec.NewManifestBundleCodec())
	if err != nil {
		t.Fatal(err)
	}
	client.Subscribe(ctx, local.HandleReceivedResource)
	s := &MQTTSource{Works: sourceclient.NewManifestWorkSourceClient(sourceID, local, client), Store: local}
	s.Works.SetNamespace(cluster)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-client.SubscribedChan():
				s.mu.Lock()
				s.subscribed = append(s.subscribed, time.Now())
				s.mu.Unlock()
				_ = client.Resync(ctx, types.ClusterAll)
			}
		}
	}()
	return s
}

// Subscriptions are the times the source subscribed, the first and each one after a lost connection.
func (s *MQTTSource) Subscriptions() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.subscribed)
}
