package process

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// registerRuntimeMetrics adds Go's and the process's own metrics to the registry the agent serves.
// controller-runtime registers them only where its controller package is linked in, and then in its
// package initialization, with MustRegister: so they are added here, when the agent starts serving,
// never at initialization (a binary linking both, as bench-fleet does, would panic). Where they are
// there already, the registry refuses them, and that refusal is all an error here can be.
func registerRuntimeMetrics() {
	_ = ctrlmetrics.Registry.Register(collectors.NewGoCollector())
	_ = ctrlmetrics.Registry.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// healthHandler answers /healthz and /livez always, and /readyz while the agent stands by for the
// Lease or leads with its caches in sync — through controller-runtime's healthz handler, as ferry-hub's
// probes: each path also answers for its named check (/readyz/caches) and lists its checks with
// ?verbose.
func healthHandler(ready *readiness) http.Handler {
	mux := http.NewServeMux()
	alive := &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping}}
	readyz := &healthz.Handler{Checks: map[string]healthz.Checker{"caches": func(*http.Request) error {
		if !ready.ready() {
			return errors.New("caches not synced")
		}
		return nil
	}}}
	for path, h := range map[string]http.Handler{"/healthz": alive, "/livez": alive, "/readyz": readyz} {
		mux.Handle(path, http.StripPrefix(path, h))
		mux.Handle(path+"/", http.StripPrefix(path, h))
	}
	return mux
}

// pprofHandler serves Go's profiles under /debug/pprof/, as net/http/pprof registers them.
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// serve serves h on addr until ctx is done; "0" or "" serves nothing.
func serve(ctx context.Context, addr string, h http.Handler) error {
	if addr == "" || addr == "0" {
		return nil
	}
	return serveOn(ctx, addr, nil, h)
}

// serveOn listens on addr and serves h there, over TLS when tlsConfig is set, until ctx is done.
func serveOn(ctx context.Context, addr string, tlsConfig *tls.Config, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "serve", "address", addr)
		}
	}()
	return nil
}
