package process_test

import (
	"context"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	workv1 "open-cluster-management.io/api/work/v1"

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
// under reports (transport.go, Connect and Receive), in the agent and in the source client alike; it
// is measured in test/e2e's BenchmarkTransports, which runs without the race detector.
func TestRunOverMQTTAppliesReportsAndDeletes(t *testing.T) {
	// As ferry-agent's main does first: informers fill by LIST then WATCH. A cloudevents source has no
	// watch-list stream (client-go's default), whose informer would never fill.
	relist.ListThenWatch()
	e := testEnv(t)
	broker := worktest.StartMosquitto(t, t.TempDir())
	const sourceID = "ferry-test"
	cluster := "mqtt-" + rand.String(5)
	config := worktest.WriteMQTTConfig(t, t.TempDir(), broker.Addr, sourceID)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	works := worktest.StartMQTTSource(ctx, t, config, sourceID, cluster).Works

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
