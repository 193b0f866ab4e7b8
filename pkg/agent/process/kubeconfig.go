package process

import (
	"context"
	"crypto/sha256"
	"io"
	"os"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// Picking up rotated hub credentials without a restart.
//
// The OCM registration agent renews the cluster's hub client certificate before it expires and writes
// the new pair as tls.crt and tls.key of the hub-kubeconfig-secret. The kubeconfig there holds the hub's
// address and CA inline and names the pair by relative path, so a renewal leaves it unchanged; it
// changes when the cluster is pointed at a hub anew. Two mechanisms cover this between them.
//
// What client-go v0.35.4 reloads by itself, for a rest.Config that keeps file references (HubConfig
// never inlines them):
//
//   - Client certificate and key files (CertFile and KeyFile both set, CertData and KeyData both empty):
//     the transport marks the config ReloadTLSFiles. Every TLS handshake reads the pair anew (cached for
//     one second, transport.cachingCertificateLoader), and a per-transport controller
//     (transport.dynamicClientCert) re-reads it every transport.CertCallbackRefreshDuration (5 minutes)
//     and, when it changed, closes every open connection, so the next request authenticates with the
//     new pair. A rotated pair is therefore in use within 5 minutes, sooner when a new connection is
//     dialled. Both files must be files: with one inline, the pair is static.
//   - A bearer token file (kubeconfig tokenFile → BearerTokenFile): re-read at most once a minute and
//     again after a 401 response (transport.NewCachedFileTokenSource).
//   - Exec credential plugins: re-run when their credential expires or after a 401.
//
// What it does not reload, and WatchFiles is for: the kubeconfig file itself — a new server URL, new
// inline CA data, new inline client certificate/key data, a switch between inline data and files, a
// different context, token file or proxy — and a CA file it names, which is read once when the
// transport is built. For those the agent has to build new hub clients: its Run is to watch
// HubWatchPaths with WatchFiles and, on a change, call HubConfig again and replace its hub clients and
// informers.

// HubWatchPaths lists the files whose change calls for new hub clients: the hub kubeconfig and the
// certificate-authority file its current context names, if any. The client certificate, key and token
// files are not among them; client-go reloads those by itself (see above).
func (o *Options) HubWatchPaths() []string {
	if o.cloudEvents() {
		// The source's configuration: a new server, CA or credential needs a new connection. (The
		// client certificate files it names, sdk-go reads again by itself every few minutes.)
		return []string{o.WorkloadSourceConfig}
	}
	path, _ := o.hubKubeconfigPath()
	if path == "" {
		return nil
	}
	paths := []string{path}
	// A kubeconfig that does not load now is still watched; its CA file is found once it loads.
	raw, err := (&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}).Load()
	if err != nil {
		return paths
	}
	if kctx := raw.Contexts[raw.CurrentContext]; kctx != nil {
		if cluster := raw.Clusters[kctx.Cluster]; cluster != nil && cluster.CertificateAuthority != "" {
			paths = append(paths, cluster.CertificateAuthority)
		}
	}
	return paths
}

// WatchFiles calls onChange when the content of the files at paths changes. It records their current
// content before it returns, then polls every interval in a goroutine of its own until ctx is done.
// Call it before loading the configuration the files hold, so that a change in between is reported
// rather than missed.
//
// Only content counts: a file rewritten with the same bytes, or touched, is no change. A missing or
// unreadable file counts as a content of its own, so its appearance or disappearance is a change.
// Files are read through symlinks, as the kubelet's atomic swap of a mounted Secret needs. A change is
// reported once the files have been the same for two polls in a row, so a kubeconfig, certificate and
// key rewritten one after another give one call, not a call for each half-written state. onChange runs
// on the polling goroutine, one call at a time.
func WatchFiles(ctx context.Context, paths []string, interval time.Duration, onChange func()) {
	watchFiles(ctx, paths, interval, onChange, nil)
}

// watchFiles is WatchFiles with a hook called after every poll, for tests.
func watchFiles(ctx context.Context, paths []string, interval time.Duration, onChange, polled func()) {
	if interval <= 0 {
		interval = time.Second
	}
	paths = append([]string(nil), paths...)
	reported := fingerprint(paths)
	go func() {
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		previous := reported
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			current := fingerprint(paths)
			if current != reported && current == previous {
				reported = current
				onChange()
			}
			previous = current
			if polled != nil {
				polled()
			}
		}
	}()
}

// fingerprint hashes the contents of the files at paths, in order.
func fingerprint(paths []string) [sha256.Size]byte {
	h := sha256.New()
	for _, p := range paths {
		_, _ = io.WriteString(h, p)
		f, err := os.Open(p)
		if err != nil {
			_, _ = io.WriteString(h, "\x00unreadable: "+err.Error())
			continue
		}
		fh := sha256.New()
		if _, err := io.Copy(fh, f); err != nil {
			_, _ = io.WriteString(h, "\x00unreadable: "+err.Error())
		} else {
			_, _ = h.Write(fh.Sum(nil))
		}
		f.Close()
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum
}
