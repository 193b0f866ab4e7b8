package localcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/template"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// The real node's container runtime is Debian's containerd, run as a child process with a
// configuration, root, state and socket of its own under the cluster's directory, never the system's
// service: nothing it stores outlives the cluster, and a containerd the machine runs is left alone.

// PauseImage is the sandbox image of every real node: the pause program of `make node`, packed at
// start-up and imported, so that containerd never pulls one. A pod may run it too, to do nothing
// until it is deleted.
const PauseImage = "ferry.io/pause:local"

// containerdConfig is containerd 1.6's configuration (version 2). The CRI plugin's settings are the
// ones this kind of machine needs (see REAL-NODE.md): root without CAP_SYS_RESOURCE may not lower
// oom_score_adj, so restrict_oom_score_adj; the kubelet drives cgroupfs, so no systemd cgroups. The
// network namespaces, the CNI configuration and runc's state live under the cluster's directory too.
var containerdConfig = template.Must(template.New("containerd").Parse(`version = 2
root = "{{.Dir}}/root"
state = "{{.Dir}}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "{{.Socket}}"

[ttrpc]
  address = "{{.Socket}}.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "{{.Dir}}/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{{.SandboxImage}}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{{.Dir}}/runc"

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{{.CNIBinDir}}"
    conf_dir = "{{.CNIConfDir}}"
    max_conf_num = 1
`))

// containerd is the node's running containerd.
type containerd struct {
	*component
	// socket is its gRPC address, for the kubelet (CRI) and ctr.
	socket string
}

// startContainerd writes containerd's configuration into dir and starts it; it returns once
// containerd answers on its socket. A containerd that started but does not answer is returned with the
// error.
func startContainerd(ctx context.Context, c *Cluster, dir, cniConfDir string) (*containerd, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	// A unix socket's path is limited to 108 bytes; the cluster's directory is short enough in
	// os.TempDir, and a longer one fails here with a clear error rather than in containerd.
	socket := filepath.Join(dir, "containerd.sock")
	if len(socket)+len(".ttrpc") >= 108 {
		return nil, fmt.Errorf("containerd socket path %s is too long for a unix socket", socket)
	}
	var cfg strings.Builder
	err := containerdConfig.Execute(&cfg, map[string]string{
		"Dir": dir, "Socket": socket, "SandboxImage": PauseImage, "CNIBinDir": cniBinDir, "CNIConfDir": cniConfDir,
	})
	if err != nil {
		return nil, err
	}
	configFile := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(configFile, []byte(cfg.String()), 0o600); err != nil {
		return nil, err
	}
	bin, err := exec.LookPath("containerd")
	if err != nil {
		return nil, err
	}
	p, err := startComponent(c, filepath.Dir(bin), "containerd", []string{"--config", configFile}, nil)
	if err != nil {
		return nil, err
	}
	cd := &containerd{component: p, socket: socket}
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last error
	err = wait.PollUntilContextCancel(waitCtx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := p.exitErr(); err != nil {
			return false, err
		}
		_, last = cd.ctr(ctx, "version")
		return last == nil, nil
	})
	if err != nil {
		// Returned with the error, so that the caller's stop stops it.
		return cd, fmt.Errorf("containerd not answering on %s: %w (last: %v; log in %s)", socket, err, last, p.log)
	}
	return cd, nil
}

// ctr runs containerd's own client against this containerd, in the CRI's namespace (k8s.io), where the
// kubelet finds images.
func (cd *containerd) ctr(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", cd.socket, "--namespace", "k8s.io"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// importImage imports a docker archive (`docker save`'s format, as `make images` and WriteImageArchive
// write) under the tags it carries.
func (cd *containerd) importImage(ctx context.Context, archive string) error {
	_, err := cd.ctr(ctx, "images", "import", archive)
	return err
}
