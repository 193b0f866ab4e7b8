package main

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// extract unpacks the image's root filesystem into root as a container runtime does — modes, and owners
// when the test runs as root — and returns the tar headers with cleaned names.
func extract(t *testing.T, img v1.Image, root string) []*tar.Header {
	t.Helper()
	// A container's root directory is world-readable; t.TempDir's is not, and the image's non-root
	// user could not resolve a single path in it.
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	var headers []*tar.Header
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read the image's filesystem: %v", err)
		}
		h.Name = path.Clean(h.Name)
		if path.IsAbs(h.Name) || h.Name == ".." || strings.HasPrefix(h.Name, "../") {
			t.Fatalf("image file %q escapes the root filesystem", h.Name)
		}
		target := filepath.Join(root, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o700)
		case tar.TypeReg:
			err = writeFile(target, tr)
		case tar.TypeSymlink:
			// A link to a binary beside it (ferry-agent's /work), never out of the root.
			if strings.Contains(h.Linkname, "/") {
				t.Fatalf("image link /%s -> %s: only links to a file beside it are expected", h.Name, h.Linkname)
			}
			err = os.Symlink(h.Linkname, target)
		default:
			err = fmt.Errorf("type %q: an image of a static binary has only files, directories and links to them", h.Typeflag)
		}
		if err != nil {
			t.Fatalf("unpack /%s: %v", h.Name, err)
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
				t.Fatal(err)
			}
		}
		if h.Typeflag == tar.TypeSymlink {
			headers = append(headers, h) // a link has no mode of its own
			continue
		}
		// After chown, which may clear set-id bits; os.Chmod keeps the sticky bit of /tmp.
		if err := os.Chmod(target, h.FileInfo().Mode()); err != nil {
			t.Fatal(err)
		}
		headers = append(headers, h)
	}
	return headers
}

func writeFile(path string, r io.Reader) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	return errors.Join(err, f.Close())
}

// containerProcess is an image's entrypoint running in its unpacked root filesystem.
type containerProcess struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

// runContainer starts the image's entrypoint with args the way a container runtime would, as far as the
// test's privileges allow: root is its root directory (chroot: only what the image holds, plus the files
// the test put there as a volume would), it runs as the image's user in the image's working directory
// with the image's environment. As root the test switches to that user; otherwise it maps the user to
// its own in a user namespace. The process is killed when the test ends, and also if the test process
// dies first.
func runContainer(t *testing.T, cfg *v1.ConfigFile, root string, args ...string) *containerProcess {
	t.Helper()
	uid, gid, ok := numericUser(cfg.Config.User)
	if !ok {
		t.Fatalf("image user %q is not numeric", cfg.Config.User)
	}
	attr := &syscall.SysProcAttr{Chroot: root, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	} else {
		attr.Cloneflags = syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: os.Getgid(), Size: 1}}
		attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}
	}
	entrypoint := cfg.Config.Entrypoint
	name := path.Base(entrypoint[0])
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	// Built by hand, not with exec.Command: that would look the entrypoint up on this machine's
	// filesystem, while it only exists inside root.
	cmd := &exec.Cmd{
		Path:        entrypoint[0],
		Args:        append(append([]string{}, entrypoint...), args...),
		Env:         append([]string{}, cfg.Config.Env...),
		Dir:         cfg.Config.WorkingDir,
		Stdout:      logFile,
		Stderr:      logFile,
		SysProcAttr: attr,
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s in the image's root filesystem %s: %v", entrypoint[0], root, err)
	}
	p := &containerProcess{name: name, cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	p.confined(t, root, hostUID(uid))
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", name, p.logTail(40))
		}
	})
	return p
}

// hostUID is the user id that the image's user uid is on this machine.
func hostUID(uid int) int {
	if os.Geteuid() == 0 {
		return uid
	}
	return os.Getuid()
}

// confined checks what the kernel says about the process: its root directory is the image's root
// filesystem and it runs as the image's user, so that what it manages to do proves the image alone is
// enough.
func (p *containerProcess) confined(t *testing.T, root string, uid int) {
	t.Helper()
	pid := strconv.Itoa(p.cmd.Process.Pid)
	if got, err := os.Readlink("/proc/" + pid + "/root"); err != nil || got != root {
		t.Errorf("%s: root directory %q (%v), want the image's root filesystem %s", p.name, got, err, root)
	}
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if fields := strings.Fields(line); len(fields) >= 2 && fields[0] == "Uid:" {
			if fields[1] != strconv.Itoa(uid) {
				t.Errorf("%s: runs as uid %s, want %d", p.name, fields[1], uid)
			}
			return
		}
	}
	t.Errorf("%s: no Uid in /proc/%s/status", p.name, pid)
}

// running fails the test if the process has exited, showing why.
func (p *containerProcess) running(t *testing.T) {
	t.Helper()
	select {
	case <-p.exited:
		t.Fatalf("%s exited (%v):\n%s", p.name, p.cmd.ProcessState, p.logTail(40))
	default:
	}
}

func (p *containerProcess) logTail(n int) string {
	data, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// mountSecret puts files into root at dir the way a Secret volume appears in a container: readable by
// the image's user only.
func mountSecret(t *testing.T, cfg *v1.ConfigFile, root, dir string, write func(hostDir string) error) {
	t.Helper()
	hostDir := filepath.Join(root, filepath.FromSlash(dir))
	if err := os.MkdirAll(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := write(hostDir); err != nil {
		t.Fatalf("write %s: %v", dir, err)
	}
	if os.Geteuid() != 0 {
		return // the test's own files are the image user's in its user namespace
	}
	uid, gid, _ := numericUser(cfg.Config.User)
	err := filepath.WalkDir(hostDir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}
