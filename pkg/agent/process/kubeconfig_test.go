package process

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"

	"github.com/go-logr/logr/funcr"

	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

func init() {
	// client-go re-reads rotated client certificate files, and drops the connections that use the old
	// pair, every CertCallbackRefreshDuration (5 minutes). It exposes the period for tests; the
	// mechanism is the same. Set once, here, before any transport exists: the reloaders read it from
	// goroutines of their own that nothing synchronises with.
	transport.CertCallbackRefreshDuration = 500 * time.Millisecond
}

// stopCertReloaders stops, when the test ends, the client certificate reloaders client-go starts for
// the clients the test builds from certificate files — one per transport, running until
// transport.DialerStopCh closes (never, outside tests) — so that they do not go on reading files the
// test removes. Call it after t.TempDir, so that it runs first. Tests running in parallel with one that
// calls it must not build clients from certificate files.
func stopCertReloaders(t *testing.T) {
	stop := make(chan struct{})
	transport.DialerStopCh = stop
	t.Cleanup(func() { close(stop) })
}

// writeHubDir lays dir out as a hub-kubeconfig-secret for cfg's user: its client certificate and key
// as tls.crt and tls.key, a kubeconfig naming them by relative path (the CA inline, as the OCM
// registration agent writes it), and cluster-name.
func writeHubDir(t *testing.T, dir string, cfg *rest.Config, clusterName string) {
	t.Helper()
	replaceFile(t, filepath.Join(dir, TLSCertFile), cfg.CertData)
	replaceFile(t, filepath.Join(dir, TLSKeyFile), cfg.KeyData)
	writeDirKubeconfig(t, dir, cfg.Host, clientcmdapi.Cluster{CertificateAuthorityData: cfg.CAData})
	replaceFile(t, filepath.Join(dir, ClusterNameFile), []byte(clusterName))
}

// replaceFile replaces path with data atomically, as the kubelet updates a mounted Secret.
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// dirOptions returns completed, validated Options for a hub kubeconfig directory.
func dirOptions(t *testing.T, dir string) *Options {
	t.Helper()
	o := NewOptions()
	o.HubKubeconfigDir = dir
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	return o
}

// whoAmI asks the API server which user the client authenticates as.
func whoAmI(ctx context.Context, kube kubernetes.Interface) (string, error) {
	r, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return r.Status.UserInfo.Username, nil
}

func addUser(t *testing.T, c *localcluster.Cluster, name string) *rest.Config {
	t.Helper()
	cfg, err := c.AddUser(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestHubCredentials(t *testing.T) {
	env := localcluster.StartForTest(t, localcluster.Options{Hub: localcluster.ClusterSpec{Name: "hub"}})
	admin, err := kubernetes.NewForConfig(env.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a client from HubConfig picks up a rotated certificate and key", func(t *testing.T) {
		userA, userB := addUser(t, env.Hub, "agent-a"), addUser(t, env.Hub, "agent-b")
		dir := t.TempDir()
		stopCertReloaders(t)
		writeHubDir(t, dir, userA, "cluster1")
		cfg, err := dirOptions(t, dir).HubConfig()
		if err != nil {
			t.Fatal(err)
		}
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if who, err := whoAmI(t.Context(), kube); err != nil || who != "agent-a" {
			t.Fatalf("before rotation the client is %q (%v), want agent-a", who, err)
		}

		// Rotate: the same files now hold user B's certificate and key; the kubeconfig is unchanged.
		replaceFile(t, filepath.Join(dir, TLSCertFile), userB.CertData)
		replaceFile(t, filepath.Join(dir, TLSKeyFile), userB.KeyData)

		var last string
		var lastErr error
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			who, err := whoAmI(ctx, kube)
			if err != nil {
				lastErr = err
				return false, nil
			}
			last, lastErr = who, nil
			return last == "agent-b", nil
		})
		if err != nil {
			t.Fatalf("the same client still authenticates as %q (last error: %v) 30s after the files were rotated to agent-b", last, lastErr)
		}
	})

	t.Run("CheckHubReachable", func(t *testing.T) {
		const ns = "cluster1"
		if _, err := admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The least privilege an agent has on the hub: ManifestWorks in its own namespace only.
		role := &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "work-agent", Namespace: ns},
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{"work.open-cluster-management.io"},
				Resources: []string{"manifestworks"},
				Verbs:     []string{"get", "list", "watch"},
			}},
		}
		if _, err := admin.RbacV1().Roles(ns).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "work-agent", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "agent-ok"}},
		}
		if _, err := admin.RbacV1().RoleBindings(ns).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}

		t.Run("namespaced credential", func(t *testing.T) {
			dir := t.TempDir()
			stopCertReloaders(t)
			writeHubDir(t, dir, addUser(t, env.Hub, "agent-ok"), ns)
			if err := dirOptions(t, dir).CheckHubReachable(t.Context()); err != nil {
				t.Errorf("CheckHubReachable() = %v, want nil for a credential that may list ManifestWorks in %s only", err, ns)
			}
		})

		t.Run("credential without RBAC", func(t *testing.T) {
			dir := t.TempDir()
			stopCertReloaders(t)
			writeHubDir(t, dir, addUser(t, env.Hub, "nobody"), ns)
			err := dirOptions(t, dir).CheckHubReachable(t.Context())
			want := "hub " + env.Hub.URL() + ": credential cannot list manifestworks in namespace cluster1: forbidden: "
			if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), `"nobody"`) || strings.Contains(err.Error(), "\n") {
				t.Errorf("CheckHubReachable() = %v\nwant one line starting %q and naming the user", err, want)
			}
		})

		// Between `clusteradm join` and `clusteradm accept` the klusterlet's hub credential is valid but
		// may not list the cluster's ManifestWorks: the agent waits for its role instead of exiting into
		// CrashLoopBackOff, and starts as soon as the hub grants it.
		t.Run("credential granted its role while the agent waits", func(t *testing.T) {
			dir := t.TempDir()
			stopCertReloaders(t)
			writeHubDir(t, dir, addUser(t, env.Hub, "agent-late"), ns)
			var logged atomic.Bool
			ctx := klog.NewContext(t.Context(), funcr.New(func(prefix, args string) {
				if strings.Contains(args, "waiting for the hub to grant") {
					logged.Store(true)
				}
			}, funcr.Options{}))
			done := make(chan error, 1)
			go func() { done <- dirOptions(t, dir).WaitHubAccess(ctx) }()
			err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				select {
				case err := <-done:
					return false, fmt.Errorf("WaitHubAccess() = %v before the hub granted the role; want it to wait", err)
				default:
					return logged.Load(), nil
				}
			})
			if err != nil {
				t.Fatalf("the agent says it waits for its role: %v", err)
			}
			late := binding.DeepCopy()
			late.Name, late.ResourceVersion = "work-agent-late", ""
			late.Subjects[0].Name = "agent-late"
			if _, err := admin.RbacV1().RoleBindings(ns).Create(t.Context(), late, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("WaitHubAccess() = %v after the hub granted the role, want nil", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("WaitHubAccess() still waiting a minute after the hub granted the role")
			}
		})

		t.Run("unknown credential", func(t *testing.T) {
			// Signed by a CA the hub does not trust.
			stranger := rest.CopyConfig(env.Hub.Config)
			pair, err := testCertKey()
			if err != nil {
				t.Fatal(err)
			}
			stranger.CertData, stranger.KeyData = pair[0], pair[1]
			dir := t.TempDir()
			stopCertReloaders(t)
			writeHubDir(t, dir, stranger, ns)
			err = dirOptions(t, dir).CheckHubReachable(t.Context())
			want := "hub " + env.Hub.URL() + ": credential rejected (401 Unauthorized): the client certificate or token is not valid for this hub"
			if err == nil || err.Error() != want {
				t.Errorf("CheckHubReachable() = %v, want %q", err, want)
			}
		})

		t.Run("unreachable hub", func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := l.Addr().(*net.TCPAddr).Port
			l.Close() // nothing listens there now
			down := rest.CopyConfig(addUser(t, env.Hub, "agent-down"))
			down.Host = "https://127.0.0.1:" + strconv.Itoa(port)
			dir := t.TempDir()
			stopCertReloaders(t)
			writeHubDir(t, dir, down, ns)
			err = dirOptions(t, dir).CheckHubReachable(t.Context())
			want := "hub " + down.Host + ": unreachable: "
			if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "connection refused") ||
				strings.Contains(err.Error(), "\n") {
				t.Errorf("CheckHubReachable() = %v, want one line starting %q saying the connection was refused", err, want)
			}
		})
	})
}

// TestWatchFiles steps the watcher one poll at a time through its test hook, so that every assertion
// is about polls that certainly saw the files as the test left them.
func TestWatchFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "ca.crt")
	replaceFile(t, a, []byte("server: one"))
	replaceFile(t, b, []byte("ca one"))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var changes atomic.Int32
	polls := make(chan struct{})
	watchFiles(ctx, []string{a, b}, time.Millisecond, func() { changes.Add(1) }, func() {
		select {
		case polls <- struct{}{}:
		case <-ctx.Done():
		}
	})
	// step lets n polls complete. A poll that completes after the test changed the files began at
	// the earliest when the poll before it completed; so of the polls after a change, the second is
	// the first that certainly saw all of it, and the third the first that saw it twice (settled).
	step := func(n int) {
		t.Helper()
		for range n {
			select {
			case <-polls:
			case <-time.After(10 * time.Second):
				t.Fatal("the watcher stopped polling")
			}
		}
	}
	expect := func(what string, want int32) {
		t.Helper()
		step(3)
		if got := changes.Load(); got != want {
			t.Fatalf("%s: onChange called %d times in all, want %d", what, got, want)
		}
		step(3) // and no more calls afterwards
		if got := changes.Load(); got != want {
			t.Fatalf("%s: onChange called %d times in all once settled, want %d", what, got, want)
		}
	}

	expect("nothing changed", 0)

	if err := os.WriteFile(a, []byte("server: one"), 0o600); err != nil { // same bytes, in place
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(b, future, future); err != nil { // touched
		t.Fatal(err)
	}
	expect("rewritten with the same content and touched", 0)

	replaceFile(t, a, []byte("server: two"))
	expect("one file changed", 1)

	replaceFile(t, a, []byte("server: three"))
	replaceFile(t, b, []byte("ca two"))
	expect("both files changed together", 2)

	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	expect("a file removed", 3)

	replaceFile(t, b, []byte("ca two"))
	expect("the file back", 4)

	replaceFile(t, a, []byte("server: four"))
	replaceFile(t, a, []byte("server: three"))
	expect("changed and changed back", 4)
}

func TestWatchFilesExported(t *testing.T) {
	p := filepath.Join(t.TempDir(), "kubeconfig")
	replaceFile(t, p, []byte("v1"))
	var changes atomic.Int32
	WatchFiles(t.Context(), []string{p}, 10*time.Millisecond, func() { changes.Add(1) })
	// The content is recorded before WatchFiles returns, so a change right after it is reported.
	replaceFile(t, p, []byte("v2"))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		return changes.Load() > 0, nil
	})
	if err != nil {
		t.Fatalf("no onChange after a change: %v", err)
	}
	if got := changes.Load(); got != 1 {
		t.Fatalf("onChange called %d times, want 1", got)
	}
}
