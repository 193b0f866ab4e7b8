package deploy

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// binaries are the commands behind each Deployment.
var binaries = map[string]string{
	"ferry-hub":   "../cmd/hub",
	"ferry-agent": "../cmd/agent",
}

// The binaries accept the command lines the Deployments give them: a flag renamed or removed in
// cmd/ and not in deploy/ (or misspelled in deploy/) fails here rather than in a crash-looping pod.
// Each binary is run with the rendered args, the kubelet's $(VAR) expansion applied, and --help,
// which cobra honours only after every flag parsed.
func TestBinariesAcceptTheDeploymentArgs(t *testing.T) {
	built := map[string]string{}
	dir := t.TempDir()
	for name, pkg := range binaries {
		built[name] = filepath.Join(dir, name)
		cmd := exec.CommandContext(t.Context(), "go", "build", "-o", built[name], pkg)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	for _, in := range installs {
		_, objs := render(t, in.dir)
		for _, d := range ofKind[appsv1.Deployment](t, objs, "Deployment") {
			c := d.Spec.Template.Spec.Containers[0]
			args := append(expandArgs(d, c), "--help")
			out, err := exec.CommandContext(t.Context(), built[d.Name], args...).CombinedOutput()
			if err != nil {
				t.Errorf("deploy/%s: %s %q: %v\n%s", in.dir, d.Name, args, err, out)
			}
		}
	}
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expandArgs expands $(VAR) in the container's args as the kubelet does, from its env: literal
// values, and the pod's namespace and name from the downward API.
func expandArgs(d *appsv1.Deployment, c corev1.Container) []string {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = d.Namespace
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = d.Name + "-0"
		}
	}
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = varRef.ReplaceAllStringFunc(a, func(ref string) string {
			if v, ok := env[varRef.FindStringSubmatch(ref)[1]]; ok {
				return v
			}
			return ref // the kubelet leaves an unknown reference as it is
		})
	}
	return args
}
