package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferry-mc/ferry/internal/testing/childproc"
	"github.com/ferry-mc/ferry/internal/testing/deployrunner"
	"github.com/ferry-mc/ferry/internal/testing/gobuild"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/manifests"
	"github.com/ferry-mc/ferry/pkg/registration"
)

// The tests that start ferry-hub and ferry-agent themselves (the kill and outage tests) start them as
// ferry-local does (hack/local): deploy/hub and deploy/agent/spoke rendered with kubectl kustomize and
// applied to their clusters but for the Deployment, whose container the local binary stands in for —
// its args and env, as its ServiceAccount with the RBAC deploy/ grants. An argument deploy/ breaks
// fails these tests; what a test changes is an explicit deployrunner.Override that says why.

// buildBinaries builds the named commands of cmd/ (ferry-hub from cmd/hub, ...) into a directory of
// the test and returns the directory.
func buildBinaries(t testing.TB, names ...string) string {
	t.Helper()
	bin := t.TempDir()
	for _, name := range names {
		build := gobuild.Command(context.Background(), repoRoot(t), filepath.Join(bin, name), "./cmd/"+name[len("ferry-"):])
		if out, err := build.CombinedOutput(); err != nil {
			t.Errorf("build %s: %v\n%s", name, err, out) // Errorf: it may run outside the test's goroutine
		}
	}
	return bin
}

// ferryProcess is ferry-hub or ferry-agent running as a child process of the test.
type ferryProcess struct {
	t testing.TB
	*childproc.Process
}

// stopGrace is how long a binary gets to stop after SIGTERM when its test ends.
const stopGrace = 15 * time.Second

// runUntilTestEnds starts cmd with its output in logPath. When the test ends it is stopped with
// SIGTERM as a supervisor would; one that exited on its own before then (crashed, or refused its
// arguments) fails the test. On failure the end of its log is printed.
func runUntilTestEnds(t testing.TB, cmd *exec.Cmd, name, logPath string) *ferryProcess {
	t.Helper()
	p, err := childproc.Start(cmd, name, logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.ExitedOnItsOwn() {
			t.Errorf("%s exited before the test ended: %s (log %s)", name, p.State(), logPath)
		} else if err := p.Stop(stopGrace); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("%s (%d runs), end of its log %s:\n%s", name, p.Runs(), logPath, p.LogTail(60))
		}
	})
	return &ferryProcess{t: t, Process: p}
}

// kill kills the process with SIGKILL and waits until it is gone. One that had already exited on its
// own fails the test: it crashed, which is not what a test that kills it provokes.
func (p *ferryProcess) kill() {
	p.t.Helper()
	if err := p.Kill(); err != nil {
		if p.ExitedOnItsOwn() {
			p.t.Error(err)
			return
		}
		p.t.Fatal(err)
	}
}

// start starts the process again with the same command after kill.
func (p *ferryProcess) start() {
	p.t.Helper()
	if err := p.Restart(); err != nil {
		p.t.Fatal(err)
	}
}

// readyTimeout bounds the wait for a binary's /readyz after its first start.
const readyTimeout = 2 * time.Minute

// waitReady waits for the process's /readyz at health, as the kubelet's readiness probe does; a
// process that exits first (an argument deploy/ breaks) fails the test at once with its log.
func (p *ferryProcess) waitReady(health string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.t.Context(), readyTimeout)
	defer cancel()
	if err := p.WaitReady(ctx, health); err != nil {
		p.t.Fatal(err)
	}
}

// render renders the kustomization deploy/<dir> of this checkout.
func render(t testing.TB, dir string) *deployrunner.Install {
	t.Helper()
	in, err := deployrunner.Render(t.Context(), filepath.Join(repoRoot(t), "deploy", dir))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// startShippedHub installs deploy/hub on the hub but for its Deployment, binds OCM's global
// ManagedClusterSet to namespace default, and runs binary as that Deployment's container, with
// overrides on top of what every local run overrides; it returns once ferry-hub is ready.
func startShippedHub(t *testing.T, hub *localcluster.Cluster, binary, logPath string, overrides ...deployrunner.Override) *ferryProcess {
	t.Helper()
	h, err := deployrunner.InstallHub(t.Context(), filepath.Join(repoRoot(t), "deploy"), hub.Name, hub.Config, filepath.Join(t.TempDir(), "ferry-hub.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	// The hub's administrator lets the namespace the tests' AppConfigs live in reach every cluster.
	if err := hub.BindGlobalClusterSet(t.Context(), "default"); err != nil {
		t.Fatal(err)
	}
	cmd, health, _, err := h.Command(binary, hub.Name, overrides...)
	if err != nil {
		t.Fatal(err)
	}
	p := runUntilTestEnds(t, cmd, fmt.Sprintf("ferry-hub on %s as %s", hub.Name, h.User), logPath)
	p.waitReady(health)
	return p
}

// startShippedAgent registers spoke with the hub as `ferry-hub clusters add` does (registration.Add:
// the ManagedCluster, its namespace, a ServiceAccount token bound to the agent's shipped hub role
// there), installs deploy/agent/spoke on the spoke but for its Deployment, and runs binary as that
// Deployment's container with the token as its mounted hub-kubeconfig-secret, overrides on top of
// what every local run overrides. It returns once the agent is ready. The hub must run
// kube-controller-manager: its token controller fills the token Secret.
func startShippedAgent(t testing.TB, env *localcluster.Environment, spoke *localcluster.Cluster, binary, logPath string, overrides ...deployrunner.Override) *ferryProcess {
	t.Helper()
	cred, err := registration.Add(t.Context(), env.Hub.Config, registration.AddOptions{Name: spoke.Name})
	if err != nil {
		t.Fatalf("register %s with the hub: %v", spoke.Name, err)
	}
	dir := t.TempDir()
	hubKubeconfigDir := filepath.Join(dir, "hub-kubeconfig")
	if err := cred.WriteDir(hubKubeconfigDir); err != nil {
		t.Fatal(err)
	}
	in := render(t, filepath.Join("agent", "spoke"))
	// The spoke serves the CRDs of manifests/ from its start (internal/testing/localcluster).
	crds, err := manifests.SpokeCRDs()
	if err != nil {
		t.Fatal(err)
	}
	if err := in.ApplyTo(t.Context(), spoke.Name, spoke.Config, crds); err != nil {
		t.Fatal(err)
	}
	spokeKubeconfig := filepath.Join(dir, "spoke.kubeconfig")
	user, err := deployrunner.ServiceAccountKubeconfig(t.Context(), spoke.Name, spoke.Config, in.Deployment, spokeKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	binds, health, _, err := deployrunner.LoopbackServers()
	if err != nil {
		t.Fatal(err)
	}
	d := in.Deployment
	cmd, err := in.Command(deployrunner.Process{
		Binary: binary,
		Fields: deployrunner.PodFields(d.Namespace, d.Name+"-"+spoke.Name),
		Overrides: append(append(binds,
			// The Secret's mount path in the pod.
			deployrunner.Set("hub-kubeconfig-dir", hubKubeconfigDir),
			// In a pod, the agent finds its ServiceAccount's in-cluster configuration instead.
			deployrunner.Add("spoke-kubeconfig", spokeKubeconfig),
		), overrides...),
	})
	if err != nil {
		t.Fatal(err)
	}
	p := runUntilTestEnds(t, cmd, fmt.Sprintf("ferry-agent on %s as %s", spoke.Name, user), logPath)
	p.waitReady(health)
	return p
}
