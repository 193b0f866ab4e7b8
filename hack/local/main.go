// Command ferry-local keeps a local hub and spokes running in the background for a person to use with
// kubectl: `ferry-local up` starts them (or reports the running set), `ferry-local down` stops them.
// Each cluster is a real etcd + kube-apiserver + kube-controller-manager (a spoke also kube-scheduler and kwok nodes) built by `make control-plane`;
// ferry-hub and ferry-agent run on them with the args, env and RBAC their Deployments in deploy/ have.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ferry-mc/ferry/internal/testing/childproc"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

type options struct {
	stateDir    string
	spokes      []string
	binaryDir   string
	timeout     time.Duration
	agents      bool
	agentBinary string
	deployDir   string
	realNode    bool
	imagesDir   string
}

func main() {
	if err := newCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "ferry-local:", err)
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	o := &options{}
	root := &cobra.Command{
		Use:           "ferry-local",
		Short:         "Run a local Ferry hub and spokes in the background",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&o.stateDir, "state-dir", ".local", "directory for kubeconfigs, the pid file and the log")
	up := &cobra.Command{
		Use:   "up",
		Short: "Start the hub and spokes, or show the running ones",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return o.up(cmd.Context()) },
	}
	serve := &cobra.Command{
		Use:    "serve",
		Short:  "Run the clusters in the foreground until interrupted",
		Args:   cobra.NoArgs,
		Hidden: true, // what `up` runs in the background
		RunE:   func(cmd *cobra.Command, _ []string) error { return o.serve(cmd.Context()) },
	}
	for _, c := range []*cobra.Command{up, serve} {
		c.Flags().StringSliceVar(&o.spokes, "spokes", []string{"cluster1", "cluster2"}, "names of the spoke clusters")
		c.Flags().StringVar(&o.binaryDir, "binary-dir", "", "directory with etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (default: bin/control-plane/current)")
		c.Flags().BoolVar(&o.agents, "agents", true, "run ferry-hub on the hub and ferry-agent for every spoke")
		c.Flags().StringVar(&o.agentBinary, "agent-binary", "", "the ferry-agent binary (default: ferry-agent beside ferry-local)")
		c.Flags().StringVar(&o.deployDir, "deploy-dir", "deploy", "the kustomizations whose Deployments, args, env and RBAC ferry-hub (<dir>/hub) and ferry-agent (<dir>/agent/spoke) run with")
		c.Flags().BoolVar(&o.realNode, "real-node", false, "give the hub a real node (kubelet + containerd; needs root) and install ferry-hub there from <deploy-dir>/hub as a pod, with the hub registered with itself as "+localClusterName+" and its ferry-agent a pod of <deploy-dir>/agent/spoke; the spokes' agents stay processes")
		c.Flags().StringVar(&o.imagesDir, "images", "bin/images", "with --real-node: the directory of the image archives `make images` writes, imported into the node")
	}
	up.Flags().DurationVar(&o.timeout, "timeout", 3*time.Minute, "how long to wait for the clusters to be ready")
	down := &cobra.Command{
		Use:   "down",
		Short: "Stop the hub and spokes",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return o.down() },
	}
	root.AddCommand(up, serve, down)
	return root
}

func (o *options) path(name string) string { return filepath.Join(o.stateDir, name) }

// The state directory holds: pid (the serving process), ferry-local.log (its output), one
// <cluster>.kubeconfig per cluster, kubeconfig (all of them as contexts) and clusters (written last,
// once every cluster is ready: one "name kubeconfig" line per cluster).
const (
	pidFile      = "pid"
	logFile      = "ferry-local.log"
	clustersFile = "clusters"
)

func (o *options) up(ctx context.Context) error {
	if err := os.MkdirAll(o.stateDir, 0o700); err != nil {
		return err
	}
	if pid, ok := o.running(); ok {
		if _, err := os.Stat(o.path(clustersFile)); err == nil {
			fmt.Printf("already running (pid %d)\n", pid)
			return o.printClusters()
		}
		return fmt.Errorf("a previous `up` (pid %d) is still starting; see %s", pid, o.path(logFile))
	}
	o.removeState()

	exe, err := os.Executable()
	if err != nil {
		return err
	}
	logf, err := os.Create(o.path(logFile))
	if err != nil {
		return err
	}
	defer logf.Close()
	deployDir, err := filepath.Abs(o.deployDir)
	if err != nil {
		return err
	}
	args := []string{"serve", "--state-dir", o.stateDir, "--spokes", strings.Join(o.spokes, ","),
		fmt.Sprintf("--agents=%t", o.agents), "--deploy-dir", deployDir}
	if o.realNode {
		if !o.agents {
			return fmt.Errorf("--real-node installs Ferry on the node; it cannot go with --agents=false")
		}
		if reason := localcluster.RealNodeUnavailable(); reason != "" {
			return fmt.Errorf("--real-node: %s", reason)
		}
		imagesDir, err := filepath.Abs(o.imagesDir)
		if err != nil {
			return err
		}
		args = append(args, "--real-node", "--images", imagesDir)
	}
	if o.binaryDir != "" {
		args = append(args, "--binary-dir", o.binaryDir)
	}
	if o.agentBinary != "" {
		args = append(args, "--agent-binary", o.agentBinary)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlive this command and its terminal
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start background process: %w", err)
	}
	if err := os.WriteFile(o.path(pidFile), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o600); err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	fmt.Printf("starting hub and spokes %s (log: %s)\n", strings.Join(o.spokes, ", "), o.path(logFile))
	deadline := time.After(o.timeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(o.path(clustersFile)); err == nil {
			return o.printClusters()
		}
		select {
		case err := <-exited:
			out, _ := os.ReadFile(o.path(logFile))
			return fmt.Errorf("the clusters failed to start (%v):\n%s", err, childproc.Tail(string(out), 30))
		case <-deadline:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			return fmt.Errorf("the clusters were not ready within %s; see %s", o.timeout, o.path(logFile))
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// demoNamespace is the hub namespace of the README's and the demo's AppConfigs.
const demoNamespace = "default"

func (o *options) serve(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	opts := localcluster.Options{Hub: localcluster.ClusterSpec{Name: "hub", ControllerManager: true, RealNode: o.realNode}, BinaryDir: o.binaryDir}
	for _, name := range o.spokes {
		opts.Spokes = append(opts.Spokes, localcluster.ClusterSpec{Name: name, ControllerManager: true})
	}
	start := time.Now()
	env, err := localcluster.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer o.removeState()
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop:", err)
		}
	}()
	if !o.agents {
		// Without the binaries, the spokes are registered as OCM's registration would; with them,
		// `ferry-hub clusters add` registers each (startAgents).
		if err := env.RegisterSpokes(ctx); err != nil {
			return err
		}
	}
	if err := o.writeKubeconfigs(env, false); err != nil {
		return err
	}
	if o.agents {
		procs, err := o.startFerry(ctx, env)
		defer func() {
			if err := stopProcesses(procs); err != nil {
				fmt.Fprintln(os.Stderr, "stop ferry-hub and the agents:", err)
			}
		}()
		if err != nil {
			return err
		}
		// The clusters file, written last, says all is ready: that includes the binaries.
		if err := waitReady(ctx, procs); err != nil {
			return err
		}
	}
	// Every spoke joined OCM's set default (`ferry-hub clusters add`, or RegisterSpokes): bound to the
	// namespace default, the README's AppConfigs there reach both, as a hub administrator would let a
	// team's namespace reach its clusters (README, "Sharing a hub between teams").
	if err := env.Hub.BindClusterSet(ctx, localcluster.DefaultClusterSet, demoNamespace); err != nil {
		return err
	}
	fmt.Printf("ManagedClusterSet %s bound to namespace %s: its AppConfigs reach the set's clusters\n", localcluster.DefaultClusterSet, demoNamespace)
	if err := o.writeKubeconfigs(env, true); err != nil {
		return err
	}
	fmt.Printf("hub and %d spokes ready in %s\n", len(env.Spokes), time.Since(start).Round(time.Millisecond))
	<-ctx.Done()
	fmt.Println("stopping")
	return nil
}

// startFerry runs ferry-hub on the hub and ferry-agent for every spoke, each as its Deployment in
// deploy/ runs it — with --real-node, ferry-hub as that Deployment's pod (installOnNode). It returns the
// processes it started, also on error, for the caller to stop.
func (o *options) startFerry(ctx context.Context, env *localcluster.Environment) ([]*process, error) {
	var procs []*process
	if o.realNode {
		if err := o.installOnNode(ctx, env); err != nil {
			return nil, err
		}
	} else {
		hub, err := o.startHub(ctx, env)
		if err != nil {
			return nil, err
		}
		procs = append(procs, hub)
	}
	agents, err := o.startAgents(ctx, env)
	return append(procs, agents...), err
}

// writeKubeconfigs writes the kubeconfigs, and with ready the clusters file that tells `up` all is
// running.
func (o *options) writeKubeconfigs(env *localcluster.Environment, ready bool) error {
	var lines []string
	var paths []string
	for _, c := range env.Clusters() {
		data, err := os.ReadFile(c.Kubeconfig)
		if err != nil {
			return err
		}
		path, err := filepath.Abs(o.path(c.Name + ".kubeconfig"))
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return err
		}
		paths = append(paths, path)
		lines = append(lines, c.Name+" "+path)
	}
	// One file with every cluster as a context, for `kubectl --context <cluster>`.
	merged, err := (&clientcmd.ClientConfigLoadingRules{Precedence: paths}).Load()
	if err != nil {
		return err
	}
	merged.CurrentContext = env.Hub.Name
	if err := clientcmd.WriteToFile(*merged, o.path("kubeconfig")); err != nil {
		return err
	}
	if !ready {
		return nil
	}
	return os.WriteFile(o.path(clustersFile), []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

func (o *options) printClusters() error {
	data, err := os.ReadFile(o.path(clustersFile))
	if err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		name, path, _ := strings.Cut(line, " ")
		fmt.Printf("%-9s kubectl --kubeconfig %s get ns\n", name, path)
	}
	all, _ := filepath.Abs(o.path("kubeconfig"))
	fmt.Printf("all       KUBECONFIG=%s kubectl --context <cluster> ...\n", all)
	return nil
}

func (o *options) down() error {
	pid, ok := o.running()
	if !ok {
		o.removeState()
		fmt.Println("not running")
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop pid %d: %w", pid, err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for localcluster.ProcessAlive(pid) {
		if time.Now().After(deadline) {
			// Its guardian removes what it leaves behind.
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return fmt.Errorf("pid %d did not stop within 90s; killed it", pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
	o.removeState()
	fmt.Println("stopped")
	return nil
}

// running returns the pid of the serving process if it is alive and is ours.
func (o *options) running() (int, bool) {
	data, err := os.ReadFile(o.path(pidFile))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || !localcluster.ProcessAlive(pid) {
		return 0, false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), "serve") {
		return 0, false // the pid was reused by something else
	}
	return pid, true
}

func (o *options) removeState() {
	for _, name := range []string{pidFile, clustersFile, "kubeconfig"} {
		_ = os.Remove(o.path(name))
	}
	matches, _ := filepath.Glob(o.path("*.kubeconfig"))
	for _, m := range matches {
		_ = os.Remove(m)
	}
	// The agents' hub credentials, for clusters that are gone.
	dirs, _ := filepath.Glob(o.path("*/hub-kubeconfig"))
	for _, d := range dirs {
		_ = os.RemoveAll(filepath.Dir(d))
	}
}
