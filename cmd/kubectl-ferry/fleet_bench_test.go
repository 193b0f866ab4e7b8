package main

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/internal/testing/benchgoal"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// BenchmarkGetWorks10000 is `kubectl ferry get works` over a fleet of 10,000 ManifestWorks, 100 in each
// of 100 cluster namespaces of a real hub: each of 5 ConfigMaps, with the status ferry-agent writes of
// it (the work Applied and Available, 5 manifest conditions of 4 conditions each), one work in a
// hundred with a drifted object. An operation is the whole command: listing in pages, judging every
// report, printing the table. Creating the works is setup, outside the timer. make bench runs it once
// (-benchtime=1x): more runs would create the fleet again for each count Go tries.
func BenchmarkGetWorks10000(b *testing.B) {
	const clusters, perCluster = 100, 100
	env := localcluster.StartForTest(b, localcluster.Options{})
	ctx := b.Context()
	// Setup writes 20,000 times: a client-go default of 5 a second would take an hour.
	cfg := rest.CopyConfig(env.Hub.Config)
	cfg.QPS, cfg.Burst = 5000, 5000
	admin, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	works, err := workclient.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	metas := make([]workv1.ManifestResourceMeta, 5)
	for i := range metas {
		metas[i] = workv1.ManifestResourceMeta{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop", Name: fmt.Sprintf("settings-%d", i)}
	}
	edited := workreport.Drift{Count: 1, Managers: []string{"kubectl-edit"}, Fields: []string{".data.mode"}, Time: metav1.Now().Time}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for c := range clusters {
		cluster := fmt.Sprintf("cluster-%03d", c)
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		for i := range perCluster {
			g.Go(func() error {
				app := fmt.Sprintf("app-%03d", i)
				mw, err := works.WorkV1().ManifestWorks(cluster).Create(gctx, newWork(cluster, v1alpha2.ManifestWorkName("shop", app), "shop", app, metas...), metav1.CreateOptions{})
				if err != nil {
					return fmt.Errorf("create a work in %s: %w", cluster, err)
				}
				r := agentReport{}
				if i == 0 {
					r.drifted = map[int32]workreport.Drift{2: edited}
				}
				mw.Status = r.status(mw, metas)
				if _, err := works.WorkV1().ManifestWorks(cluster).UpdateStatus(gctx, mw, metav1.UpdateOptions{}); err != nil {
					return fmt.Errorf("report on work %s/%s: %w", cluster, mw.Name, err)
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}

	// Once untimed, to check what it prints: the API server has just taken 20,000 writes, which a
	// hub's steady state does not have behind each read.
	var out bytes.Buffer
	if err := kubectlFerry(ctx, env.Hub.Kubeconfig, &out, "get", "works"); err != nil {
		b.Fatal(err)
	}
	if lines := bytes.Count(out.Bytes(), []byte("\n")); lines != clusters*perCluster+1 {
		b.Fatalf("printed %d lines, want a header and %d works", lines, clusters*perCluster)
	}
	if drifted := bytes.Count(out.Bytes(), []byte("Healthy   1 ")); drifted != clusters {
		b.Fatalf("%d lines of a drifted work, want %d", drifted, clusters)
	}

	// On a machine shared with other work the time taken says as much about the others; the processor
	// time of the hub (its API server and etcd) and of the plugin say what the command costs.
	hubBefore, pluginBefore := hubCPU(b, env), pluginCPU()
	b.ResetTimer()
	for range b.N {
		out.Reset()
		if err := kubectlFerry(ctx, env.Hub.Kubeconfig, &out, "get", "works"); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	benchgoal.Report(b, b.Elapsed().Seconds()/n, "s/op", benchgoal.AtMost(3))
	b.ReportMetric((hubCPU(b, env)-hubBefore).Seconds()/n, "hub-cpu-s/op")
	b.ReportMetric((pluginCPU()-pluginBefore).Seconds()/n, "plugin-cpu-s/op")
}

// hubCPU is the processor time the hub's processes have used so far.
func hubCPU(b *testing.B, env *localcluster.Environment) time.Duration {
	b.Helper()
	byProcess, err := env.Hub.CPUTime()
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for _, d := range byProcess {
		total += d
	}
	return total
}

// pluginCPU is the processor time this process, which runs the plugin, has used so far.
func pluginCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
