package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-mc/ferry/internal/testing/fleetsim"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// Process names in the sampler and the result.
const (
	hubName   = "ferry-hub"
	benchName = "bench-fleet"
)

// clientQPS is the pace the benchmark's own clients may go at: as an administrator its requests are
// exempt from the API server's priority and fairness, and only its concurrency limits bound it.
const clientQPS, clientBurst = 5000, 10000

// bench is one run of the benchmark: what it started and what it measured so far.
type bench struct {
	o     *options
	start time.Time
	res   *Result

	env      *localcluster.Environment
	admin    *rest.Config
	kube     kubernetes.Interface
	client   client.WithWatch
	workAPI  workclient.Interface
	tracker  *fleetsim.WorkTracker
	apps     *fleetsim.AppConfigWatcher
	sampler  *fleetsim.Sampler
	hubs     []*hubProcess
	clusters []string
	// rolloutRun is what the rollout phases share (--rollout).
	rolloutRun *rolloutRun
	// cleanup stops what was started, last first.
	cleanup []func() error

	// restartBackoff is the first wait before a ferry-hub that exited is started again; 0 is the
	// kubelet's.
	restartBackoff time.Duration

	mu        sync.Mutex
	phaseName string
}

func run(ctx context.Context, o *options) error {
	b := &bench{o: o, start: time.Now(), res: newResult(o), sampler: fleetsim.NewSampler(o.sampleInterval)}
	if o.pprofAddress != "" {
		stop, err := servePprof(o.pprofAddress)
		if err != nil {
			return err
		}
		defer stop()
	}
	err := b.run(ctx)
	if err != nil {
		b.res.Error = err.Error()
	}
	// What was measured is reported also when a phase failed or the run was interrupted.
	b.finish()
	if terr := b.res.writeTable(os.Stdout); terr != nil {
		err = errors.Join(err, terr)
	}
	if jerr := b.res.writeJSON(o.jsonPath); jerr != nil {
		err = errors.Join(err, jerr)
	} else {
		fmt.Printf("\nfigures written to %s; ferry-hub's log: %s\n", o.jsonPath, o.hubLog)
	}
	if err == nil && o.keep {
		fmt.Printf("\n--keep: the hub keeps running; kubectl --kubeconfig %s get appconfigs -A. Ctrl-C stops it.\n", b.env.Hub.Kubeconfig)
		<-ctx.Done()
	}
	for i := len(b.cleanup) - 1; i >= 0; i-- {
		if cerr := b.cleanup[i](); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}
	return err
}

func (b *bench) run(ctx context.Context) error {
	// A ferry-hub that keeps exiting ends the run, with the reason, wherever it is.
	ctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	b.sampler.Watch(benchName, os.Getpid())
	sampling, stopSampling := context.WithCancel(ctx)
	b.cleanup = append(b.cleanup, func() error { stopSampling(); return nil })
	go b.sampler.Run(sampling)

	if b.o.cpuLoad > 0 {
		if err := b.startCPULoad(); err != nil {
			return err
		}
	}
	b.logf("starting the hub's etcd and kube-apiserver")
	env, err := localcluster.Start(ctx, localcluster.Options{Hub: localcluster.ClusterSpec{Name: "hub"}, BinaryDir: b.o.binaryDir, TempDir: b.o.tempDir})
	if err != nil {
		return err
	}
	b.env = env
	b.cleanup = append(b.cleanup, env.Stop)
	b.logf("hub at %s, data in %s", env.Hub.URL(), env.Dir)
	procs, err := env.Hub.Processes()
	if err != nil {
		return err
	}
	for _, p := range procs {
		b.sampler.Watch(p.Name, p.PID)
	}
	if err := b.clients(); err != nil {
		return err
	}
	// The benchmark's watches end before the hub does: kube-apiserver waits for open requests when it
	// stops.
	watching, stopWatching := context.WithCancel(ctx)
	b.cleanup = append(b.cleanup, func() error { stopWatching(); return nil })

	if err := b.phase(ctx, "register clusters", b.register); err != nil {
		return err
	}
	// Before ferry-hub starts and before any AppConfig exists: a hub that holds AppConfigs to their
	// namespaces' bindings delivers from the first.
	if err := b.phase(ctx, "bind cluster sets", b.bindClusterSets); err != nil {
		return err
	}
	// Both watches run from before the hub writes anything, so that they see every change.
	if err := b.tracker.Start(watching); err != nil {
		return err
	}
	if err := b.apps.Start(watching); err != nil {
		return err
	}
	if err := b.phase(ctx, "start ferry-hub", b.startHubs); err != nil {
		return err
	}
	// Supervision ends before the processes are stopped, which it would take for exits.
	supervising, stopSupervising := context.WithCancel(ctx)
	b.cleanup = append(b.cleanup, func() error { stopSupervising(); return nil })
	for _, h := range b.hubs {
		go b.supervise(supervising, h, fail)
	}
	type step struct {
		name string
		run  func(context.Context) error
	}
	steps := []step{
		{"components", b.createComponents},
		{"write works", b.writeWorks},
		{"first status", b.firstStatus},
		{"degrade", b.degrade},
		{"heal", b.heal},
		{"component change", b.changeComponent},
	}
	if b.o.overrides {
		steps = append(steps, step{"override change", b.changeOverride})
	}
	steps = append(steps, step{"measure AppConfigs", b.measureAppConfigs})
	if b.o.rollout {
		steps = append(steps, step{"rollout spec", b.setRollout}, step{"rollout", b.rollout})
	}
	for _, step := range steps {
		if err := b.phase(ctx, step.name, step.run); err != nil {
			return err
		}
	}
	return nil
}

// clients makes the benchmark's clients: an administrator's, fast.
func (b *bench) clients() error {
	b.admin = fleetsim.FastConfig(b.env.Hub.Config, clientQPS, clientBurst)
	var err error
	if b.kube, err = kubernetes.NewForConfig(b.admin); err != nil {
		return err
	}
	if b.workAPI, err = workclient.NewForConfig(b.admin); err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, v1alpha2.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	if b.client, err = client.NewWithWatch(b.admin, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if b.tracker, err = fleetsim.NewWorkTracker(b.workAPI); err != nil {
		return err
	}
	b.apps, err = fleetsim.NewAppConfigWatcher(b.client, b.o.watchedNamespace())
	return err
}

func (b *bench) startHubs(ctx context.Context) error {
	hubs, err := startHubs(ctx, b.env, b.o)
	b.hubs = hubs
	if len(hubs) > 0 {
		b.cleanup = append(b.cleanup, func() error { return stopHubs(hubs) })
	}
	for _, h := range hubs {
		b.sampler.Watch(h.sampled, h.PID())
	}
	if err != nil {
		return err
	}
	for _, h := range hubs {
		b.logf("%s ready, metrics at http://%s/metrics, log %s", h.Name, h.metrics, h.Log)
	}
	return nil
}

// usage is a moment's figures of the processes, to subtract one phase's start from its end.
type usage struct {
	requests  requestTimes
	hubWrites float64
	cpu       map[string]time.Duration
	hubRSS    uint64
	hubHeap   uint64
	appConfig controllerTimes
}

// controllerTimes is the AppConfig controller's counters of ferry-hub: its reconciles and the time
// they took, and the requests its queue handed out and the time they waited in it.
type controllerTimes struct {
	reconciles, reconcileSeconds, dequeued, queuedSeconds float64
}

// hubFlowSchema is the flow schema of kube-apiserver's priority and fairness ferry-hub's requests fall
// in: it runs as deploy/hub's ServiceAccount.
const hubFlowSchema = "service-accounts"

// appConfigController is the name of ferry-hub's AppConfig controller in its metrics.
const appConfigController = "appconfigs"

func controllerTimesOf(s fleetsim.Samples) controllerTimes {
	return controllerTimes{
		reconciles:       s.Sum("controller_runtime_reconcile_time_seconds_count", map[string]string{"controller": appConfigController}),
		reconcileSeconds: s.Sum("controller_runtime_reconcile_time_seconds_sum", map[string]string{"controller": appConfigController}),
		dequeued:         s.Sum("workqueue_queue_duration_seconds_count", map[string]string{"name": appConfigController}),
		queuedSeconds:    s.Sum("workqueue_queue_duration_seconds_sum", map[string]string{"name": appConfigController}),
	}
}

func (b *bench) usage(ctx context.Context) usage {
	b.sampler.Sample()
	u := usage{cpu: map[string]time.Duration{}}
	if b.kube != nil {
		// Without them the phase is still measured; the breakdown is only missing.
		u.requests, _ = b.apiServerRequests(ctx)
	}
	for _, name := range b.sampler.Names() {
		s, err := b.sampler.Usage(name)
		if err != nil {
			continue
		}
		key := name
		if strings.HasPrefix(name, hubName) {
			key = hubName // the shards together
			u.hubRSS += s.RSS
		}
		u.cpu[key] += s.CPU
	}
	for _, h := range b.hubs {
		if s, err := h.scrape(ctx); err == nil {
			u.hubHeap += uint64(s.Sum("go_memstats_heap_inuse_bytes", nil))
			c := controllerTimesOf(s)
			u.appConfig.reconciles += c.reconciles
			u.appConfig.reconcileSeconds += c.reconcileSeconds
			u.appConfig.dequeued += c.dequeued
			u.appConfig.queuedSeconds += c.queuedSeconds
		}
		u.hubWrites += h.totalWrites()
	}
	return u
}

// phase runs one phase and records where its time went.
func (b *bench) phase(ctx context.Context, name string, f func(context.Context) error) error {
	b.logf("%s", name)
	b.mu.Lock()
	b.phaseName = name
	b.mu.Unlock()
	before := b.usage(ctx)
	start := time.Now()
	err := f(ctx)
	p := PhaseResult{Name: name, Seconds: time.Since(start).Seconds(), CPUSeconds: map[string]float64{}}
	// Figures of a phase cut short still say where its time went; a cancelled ctx cannot scrape.
	after := b.usage(context.WithoutCancel(ctx))
	p.HubWrites = after.hubWrites - before.hubWrites
	for k, v := range after.cpu {
		p.CPUSeconds[k] = (v - before.cpu[k]).Seconds()
	}
	p.HubRSS, p.HubHeap = after.hubRSS, after.hubHeap
	// A restarted hub starts its counters again: such a phase says nothing here rather than nonsense.
	if d := after.appConfig.reconciles - before.appConfig.reconciles; d > 0 {
		p.AppConfigReconciles = d
		p.ReconcileMeanSeconds = (after.appConfig.reconcileSeconds - before.appConfig.reconcileSeconds) / d
	}
	if d := after.appConfig.dequeued - before.appConfig.dequeued; d > 0 {
		p.QueueWaitMeanSeconds = (after.appConfig.queuedSeconds - before.appConfig.queuedSeconds) / d
	}
	p.APIServer = topRequests(before.requests, after.requests, 5)
	p.AppConfigPatches = after.requests["PATCH applicationconfigurations/status"].Count - before.requests["PATCH applicationconfigurations/status"].Count
	p.AppConfigPatchBytes = bodyBytes(before.requests, after.requests, "patch", "applicationconfigurations")
	if all, hub := flowSeconds(before.requests, after.requests, hubFlowSchema); all > 0 {
		p.HubAPIServerShare = hub / all
	}
	b.res.Phases = append(b.res.Phases, p)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// finish records what was sampled of every process over the run, and judges the targets.
func (b *bench) finish() {
	b.mu.Lock()
	defer b.mu.Unlock() // the supervisors may still record a restart
	b.sampler.Sample()
	for _, name := range b.sampler.Names() {
		s, err := b.sampler.Usage(name)
		if err != nil {
			continue
		}
		b.res.Processes = append(b.res.Processes, ProcessResult{Name: name, PeakRSS: s.PeakRSS, HWM: s.HWM, CPUSeconds: s.CPU.Seconds()})
	}
	if b.env != nil {
		b.res.EtcdDataBytes = dirSize(filepath.Join(b.env.Hub.Dir, "etcd"))
	}
	b.res.Targets = b.res.targets()
	b.res.Machine.LoadAverageEnd = loadAverage()
}

// dirSize is the bytes of the files under dir (0 when it cannot be read).
func dirSize(dir string) uint64 {
	var total uint64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			total += uint64(info.Size())
		}
		return nil
	})
	return total
}

// progressEvery is how often a wait says how far it got.
const progressEvery = 10 * time.Second

// pollEvery is how often a wait looks. The figures do not depend on it: they come from the times the
// watches saw each change.
const pollEvery = 250 * time.Millisecond

// waitFor polls done until it holds, within timeout. Every progressEvery, and in the error when it
// does not hold in time, progress says how far it got. A run cancelled (interrupted, or ferry-hub
// exiting too often) ends it with the reason.
func (b *bench) waitFor(ctx context.Context, what string, timeout time.Duration, progress func() string, done func(context.Context) (bool, error)) error {
	last := time.Now()
	err := wait.PollUntilContextTimeout(ctx, pollEvery, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := done(ctx)
		if err != nil || ok {
			return ok, err
		}
		if time.Since(last) >= progressEvery {
			b.logf("  waiting for %s: %s", what, progress())
			last = time.Now()
		}
		return false, nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("stopped while waiting for %s (%s): %w", what, progress(), context.Cause(ctx))
	case wait.Interrupted(err):
		return fmt.Errorf("%s: not within %s; got %s", what, timeout, progress())
	}
	return fmt.Errorf("waiting for %s (%s): %w", what, progress(), err)
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%8s] %s\n", time.Since(b.start).Round(time.Second), fmt.Sprintf(format, args...))
}

// servePprof serves Go's /debug/pprof profiles of bench-fleet itself on addr until stop is called.
func servePprof(addr string) (stop func(), err error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-bind-address: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return func() { _ = srv.Close() }, nil
}
