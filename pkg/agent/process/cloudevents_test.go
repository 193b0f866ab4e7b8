package process_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
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

	"github.com/ferry-mc/ferry/internal/testing/worktest"
	"github.com/ferry-mc/ferry/pkg/agent/process"
	"github.com/ferry-mc/ferry/pkg/relist"
)

// ferry-agent started as a klusterlet starts OCM's agent over a message queue (--workload-source-driver
// mqtt, --workload-source-config, no hub kubeconfig) takes its cluster's works from an MQTT broker, as
// Maestro delivers them: a source publishes a work with sdk-go's source client (the manifestbundles
// codec); the agent applies it on the spoke and reports Applied and Available back through the broker;
// the source deletes it, and the agent deletes its object and tells the source the work is gone.
//
// A broker restart is not tested here: sdk-go v1.2.0's MQTT transport, reconnecting, replaces a
// channel its previous receive loop read without a lock, which the race detector `make test` runs
// under reports (transport.go, Connect and Receive); it belongs in a test of the shipped binary.
func TestRunOverMQTTAppliesReportsAndDeletes(t *testing.T) {
	// As ferry-agent's main does first: informers fill by LIST then WATCH. A cloudevents source has no
	// watch-list stream (client-go's default), whose informer would never fill.
	relist.ListThenWatch()
	e := testEnv(t)
	broker := startMosquitto(t)
	const sourceID = "ferry-test"
	cluster := "mqtt-" + rand.String(5)
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`brokerHost: %s
topics:
  sourceEvents: sources/%s/clusters/+/sourceevents
  agentEvents: sources/%s/clusters/+/agentevents
`, broker, sourceID, sourceID)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	works := mqttSource(ctx, t, config, sourceID, cluster)

	o := runOptions(t, func(o *process.Options) {
		o.WorkloadSourceDriver = process.WorkloadSourceMQTT
		o.WorkloadSourceConfig = config
		o.SpokeClusterName = cluster
	})
	if o.CloudEventsClientID != cluster+"-work-agent" {
		t.Errorf("client ID %q; want %s-work-agent, as the klusterlet passes it", o.CloudEventsClientID, cluster)
	}
	done := make(chan error, 1)
	go func() { done <- process.Run(ctx, o) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	spoke, err := kubernetes.NewForConfig(e.Spoke("spoke").Config)
	if err != nil {
		t.Fatal(err)
	}
	f := &clusterWorks{t: t, cluster: cluster}
	name := cluster + "-hello"
	w := f.work(name, fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: default}, data: {greeting: hello}}`, name))
	if _, err := works.Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("publish work %s: %v", name, err)
	}
	var seen *workv1.ManifestWork
	worktest.Eventually(t, "the agent applies the work", func(ctx context.Context) (bool, error) {
		_, err := spoke.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
		return err == nil, nil
	})
	worktest.Eventually(t, "the source sees the work Applied and Available", func(ctx context.Context) (bool, error) {
		var err error
		if seen, err = works.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		return allApplied(seen) && len(seen.Status.ResourceStatus.Manifests) == 1, nil
	})

	if err := works.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete work %s at the source: %v", name, err)
	}
	worktest.Eventually(t, "the agent deletes the work's ConfigMap", func(ctx context.Context) (bool, error) {
		_, err := spoke.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	worktest.Eventually(t, "the source hears the work is gone", func(ctx context.Context) (bool, error) {
		_, err := works.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// mqttSource is a source of works over the MQTT broker config names, as Maestro is: sdk-go's source
// client with the manifestbundles codec, publishing the works of cluster and keeping their status as
// the agent reports it.
func mqttSource(ctx context.Context, t *testing.T, config, sourceID, cluster string) *sourceclient.ManifestWorkSourceClient {
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
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-client.SubscribedChan():
				_ = client.Resync(ctx, types.ClusterAll)
			}
		}
	}()
	works := sourceclient.NewManifestWorkSourceClient(sourceID, local, client)
	works.SetNamespace(cluster)
	return works
}

// startMosquitto runs Debian's MQTT broker (.ci/run installs the mosquitto package) on a free loopback
// port for the test, and returns its host:port once it accepts connections.
func startMosquitto(t *testing.T) string {
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
	cmd := exec.Command(bin, "-c", conf)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start mosquitto: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	worktest.WaitListening(t, "mosquitto", addr)
	return addr
}
