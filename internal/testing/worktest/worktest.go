// Package worktest holds what tests of ferry-agent do with ManifestWorks on a real hub: create, change
// and wait for a work's report, or for a server a test runs beside them to listen; and over MQTT, a
// broker and a source of works as Maestro is one. Entry points: Eventually, UpdateWork, WaitWork,
// WaitListening; StartMosquitto, WriteMQTTConfig, StartMQTTSource.
package worktest

import (
	"context"
	"net"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	workclientset "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"
)

// Timeout bounds each wait: an agent answers in milliseconds, so 30 s is only ever reached by a
// failure.
const Timeout = 30 * time.Second

// Eventually polls cond every 50ms until it holds, failing the test after Timeout.
func Eventually(t testing.TB, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), Timeout)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// WaitListening returns once something accepts TCP connections at addr (host:port), as a server the
// test started does when it is up (an MQTT broker, OCM's gRPC server); it fails the test after Timeout.
func WaitListening(t testing.TB, name, addr string) {
	t.Helper()
	Eventually(t, name+" accepts connections on "+addr, func(ctx context.Context) (bool, error) {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return false, nil
		}
		return true, c.Close()
	})
}

// UpdateWork changes work namespace/name on the hub with fn, retrying on conflicts.
func UpdateWork(t testing.TB, hub workclientset.Interface, namespace, name string, fn func(*workv1.ManifestWork)) {
	t.Helper()
	Eventually(t, "update work "+name, func(ctx context.Context) (bool, error) {
		w, err := hub.WorkV1().ManifestWorks(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		fn(w)
		_, err = hub.WorkV1().ManifestWorks(namespace).Update(ctx, w, metav1.UpdateOptions{})
		return err == nil, nil
	})
}

// WaitWork polls work namespace/name on the hub until check passes on it, and returns it; the failure
// shows the work's last status.
func WaitWork(t testing.TB, hub workclientset.Interface, namespace, name, what string, check func(*workv1.ManifestWork) bool) *workv1.ManifestWork {
	t.Helper()
	var last *workv1.ManifestWork
	ctx, cancel := context.WithTimeout(t.Context(), Timeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		w, err := hub.WorkV1().ManifestWorks(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = w
		return check(w), nil
	})
	if err != nil {
		var status []byte
		if last != nil {
			status, _ = yaml.Marshal(last.Status)
		}
		t.Fatalf("work %s: %s: %v; status:\n%s", name, what, err, status)
	}
	return last
}
