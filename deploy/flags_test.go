package deploy

import (
	"os/exec"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/ferry-mc/ferry/internal/testing/gobuild"
)

// binaries are the commands behind each Deployment.
var binaries = map[string]string{
	"ferry-hub":   "../cmd/hub",
	"ferry-agent": "../cmd/agent",
}

// The binaries accept the command lines the Deployments give them: a flag renamed or removed in
// cmd/ and not in deploy/ (or misspelled in deploy/) fails here rather than in a crash-looping pod.
// Each binary is run with the rendered args, the kubelet's $(VAR) expansion applied, and --help,
// which cobra honours only after every flag parsed. (What ferry-agent then makes of its args, the
// files they name included, is completeAgentInPod's.)
func TestBinariesAcceptTheDeploymentArgs(t *testing.T) {
	built := map[string]string{}
	dir := t.TempDir()
	for name, pkg := range binaries {
		built[name] = filepath.Join(dir, name)
		cmd := gobuild.Command(t.Context(), "", built[name], pkg)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	for _, in := range installs {
		_, objs := render(t, in.dir)
		for _, d := range ofKind[appsv1.Deployment](t, objs, "Deployment") {
			expanded, err := expandArgs(d)
			if err != nil {
				t.Fatalf("deploy/%s: %v", in.dir, err)
			}
			args := append(expanded, "--help")
			out, err := exec.CommandContext(t.Context(), built[d.Name], args...).CombinedOutput()
			if err != nil {
				t.Errorf("deploy/%s: %s %q: %v\n%s", in.dir, d.Name, args, err, out)
			}
		}
	}
}
