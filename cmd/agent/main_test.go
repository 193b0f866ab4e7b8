package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// execute runs the command in-process and returns its exit code and output.
func execute(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(t.Context(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestErrorsAreOneLine(t *testing.T) {
	emptyDir := t.TempDir()
	missing := filepath.Join(t.TempDir(), "kubeconfig")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--bogus"}, "ferry-agent: unknown flag: --bogus\n"},
		{"bad flag value", []string{"--workers=many"},
			`ferry-agent: invalid argument "many" for "--workers" flag: strconv.ParseInt: parsing "many": invalid syntax` + "\n"},
		{"missing hub kubeconfig", []string{"--hub-kubeconfig", missing, "--spoke-cluster-name", "cluster1"},
			"ferry-agent: --hub-kubeconfig " + missing + ": no such file\n"},
		{"hub kubeconfig dir without kubeconfig", []string{"--hub-kubeconfig-dir", emptyDir},
			"ferry-agent: --hub-kubeconfig-dir " + emptyDir + ": no kubeconfig file in it\n"},
		{"no hub kubeconfig", nil, "ferry-agent: --hub-kubeconfig or --hub-kubeconfig-dir is required\n"},
		// OCM's work agent command line: the positional agent is taken, and the flags after it are read.
		{"klusterlet command line", []string{"agent", "--spoke-cluster-name=cluster1"},
			"ferry-agent: --hub-kubeconfig or --hub-kubeconfig-dir is required\n"},
		// As the kubelet runs the klusterlet's Deployment (args `/work agent …`, no command) with
		// Ferry's image: after its entrypoint.
		{"klusterlet args after the image's entrypoint", []string{"/work", "agent", "--spoke-cluster-name=cluster1"},
			"ferry-agent: --hub-kubeconfig or --hub-kubeconfig-dir is required\n"},
		{"/work without agent", []string{"/work", "--spoke-cluster-name=cluster1"},
			`ferry-agent: unexpected argument "/work": ferry-agent takes flags only (and the positional agent of OCM's work agent command line)` + "\n"},
		{"another argument", []string{"registration", "--spoke-cluster-name=cluster1"},
			`ferry-agent: unexpected argument "registration": ferry-agent takes flags only (and the positional agent of OCM's work agent command line)` + "\n"},
		{"a bad TLS version", []string{"agent", "--hub-kubeconfig-dir", emptyDir, "--tls-min-version=VersionSSL3"},
			`ferry-agent: --tls-min-version "VersionSSL3": unknown tls version "VersionSSL3"` + "\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := execute(t, tc.args...)
			if code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			if stderr != tc.want {
				t.Errorf("stderr = %q, want %q", stderr, tc.want)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing (no usage dump on errors)", stdout)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	code, stdout, stderr := execute(t, "--help")
	if code != 0 || stderr != "" {
		t.Fatalf("--help: exit code %d, stderr %q", code, stderr)
	}
	for _, flag := range []string{
		"--spoke-cluster-name", "--hub-kubeconfig ", "--hub-kubeconfig-dir", "--spoke-kubeconfig", "--agent-id",
		"--kube-api-qps", "--kube-api-burst", "--hub-kube-api-qps", "--hub-kube-api-burst", "--status-sync-interval",
		"--workers", "--metrics-bind-address", "--health-probe-bind-address",
	} {
		if !strings.Contains(stdout, flag) {
			t.Errorf("--help does not list %s:\n%s", flag, stdout)
		}
	}
}
