package deployrunner

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// deployDir is the repository's deploy/, relative to this package.
const deployDir = "../../../deploy/"

// The command for ferry-hub is the shipped Deployment's: its args with the pod's namespace expanded,
// the overrides a local process needs, and the container's env as the whole environment.
func TestCommandRunsTheShippedHub(t *testing.T) {
	in, err := Render(t.Context(), deployDir+"hub")
	if err != nil {
		t.Fatal(err)
	}
	d := in.Deployment
	cmd, err := in.Command(Process{
		Binary: "/bin/ferry-hub",
		Fields: PodFields(d.Namespace, d.Name+"-local"),
		Overrides: []Override{
			Set("health-probe-bind-address", "127.0.0.1:40001"),
			Set("metrics-bind-address", "127.0.0.1:40002"),
			Add("kubeconfig", "/local/hub.kubeconfig"),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	args := cmd.Args[1:]
	for _, want := range []string{
		"--leader-elect",
		"--leader-election-namespace=" + d.Namespace,
		"--health-probe-bind-address=127.0.0.1:40001",
		"--metrics-bind-address=127.0.0.1:40002",
		"--kubeconfig=/local/hub.kubeconfig",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if len(args) != len(d.Spec.Template.Spec.Containers[0].Args)+1 {
		t.Errorf("args %q: want the Deployment's %q and --kubeconfig, nothing else", args, d.Spec.Template.Spec.Containers[0].Args)
	}
	if want := append([]string{"POD_NAMESPACE=ferry-system"}, plainEnv(d)...); !slices.Equal(cmd.Env, want) {
		t.Errorf("env %q, want %q and nothing of the caller's", cmd.Env, want)
	}
	if cmd.Path != "/bin/ferry-hub" {
		t.Errorf("binary %s, want /bin/ferry-hub", cmd.Path)
	}
}

// The agent's pod name reaches the process through the downward API's metadata.name.
func TestCommandRunsTheShippedAgent(t *testing.T) {
	in, err := Render(t.Context(), deployDir+"agent/spoke")
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := in.Command(Process{
		Binary: "/bin/ferry-agent",
		Fields: PodFields(in.Deployment.Namespace, "ferry-agent-cluster1"),
		Overrides: []Override{
			Set("hub-kubeconfig-dir", "/local/cluster1/hub-kubeconfig"),
			Set("health-probe-bind-address", "127.0.0.1:40001"),
			Set("metrics-bind-address", "127.0.0.1:40002"),
			Add("spoke-kubeconfig", "/local/cluster1/spoke.kubeconfig"),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := append([]string{"POD_NAMESPACE=ferry-agent", "POD_NAME=ferry-agent-cluster1"}, plainEnv(in.Deployment)...); !slices.Equal(cmd.Env, want) {
		t.Errorf("env %q, want %q", cmd.Env, want)
	}
	for _, want := range []string{"--hub-kubeconfig-dir=/local/cluster1/hub-kubeconfig", "--spoke-kubeconfig=/local/cluster1/spoke.kubeconfig"} {
		if !slices.Contains(cmd.Args, want) {
			t.Errorf("args %q lack %q", cmd.Args, want)
		}
	}
	// What is applied before the agent runs: everything rendered but its Deployment.
	resources := in.Resources()
	if len(resources) != len(in.Objects)-1 {
		t.Errorf("Resources: %d objects of %d rendered, want all but the Deployment", len(resources), len(in.Objects))
	}
	for _, o := range resources {
		if o.GetKind() == "Deployment" {
			t.Errorf("Resources holds the Deployment %s", o.GetName())
		}
	}
}

func TestRenderWithoutKubectlSaysSo(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Render(t.Context(), deployDir+"hub")
	if err == nil || !strings.Contains(err.Error(), "kubectl is not in PATH") {
		t.Fatalf("Render without kubectl: %v, want an error saying kubectl is not in PATH", err)
	}
}

func TestAnInstallRunsOneDeployment(t *testing.T) {
	deployment := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a, namespace: ns}\n"
	for _, tc := range []struct {
		name, yaml, wantErr string
	}{
		{"none", "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n", "found 0"},
		{"two", deployment + "---\n" + deployment, "found 2"},
		{"a field the client does not know", deployment + "spec: {replicaz: 1}\n", `unknown field "spec.replicaz"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := DecodeObjects([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := theDeployment(objs); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("theDeployment: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// A command would replace the entrypoint the local binary stands in for, and a second container
// would leave unsaid which one runs: both are refused rather than run as something else.
func TestCommandRefusesWhatALocalBinaryCannotStandInFor(t *testing.T) {
	for _, tc := range []struct {
		name       string
		containers []corev1.Container
		wantErr    string
	}{
		{"command", []corev1.Container{{Name: "c", Command: []string{"/other"}}}, "sets command"},
		{"two containers", []corev1.Container{{Name: "a"}, {Name: "b"}}, "has 2 containers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &appsv1.Deployment{}
			d.Name = "ferry-hub"
			d.Spec.Template.Spec.Containers = tc.containers
			in := &Install{Dir: "deploy/hub", Deployment: d}
			if _, err := in.Command(Process{Binary: "/bin/x"}); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Command: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// A container's environment is its env and nothing else: the caller's variables (a KUBECONFIG, a
// proxy) would make the local process differ from the pod. Run env(1) as the container to see.
func TestCommandGivesNoneOfTheCallersEnv(t *testing.T) {
	envBinary, err := exec.LookPath("env")
	if err != nil {
		t.Fatalf("env(1) is not in PATH: %v", err)
	}
	t.Setenv("KUBECONFIG", "/callers/kubeconfig")
	for _, tc := range []struct {
		name string
		env  []corev1.EnvVar
		want string
	}{
		{"the container's env", []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: fieldRef("metadata.namespace")}}, "POD_NAMESPACE=ferry-system\n"},
		{"no env at all", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &appsv1.Deployment{}
			d.Name = "ferry-hub"
			d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "ferry-hub", Env: tc.env}}
			in := &Install{Dir: "deploy/hub", Deployment: d}
			cmd, err := in.Command(Process{Binary: envBinary, Fields: PodFields("ferry-system", "ferry-hub-0")})
			if err != nil {
				t.Fatal(err)
			}
			out, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Errorf("the process's environment is %q, want %q", out, tc.want)
			}
		})
	}
}

// plainEnv is the env the Deployment's container sets by value (GOMEMLIMIT), as NAME=value, in order;
// the entries read from the pod's fields come first in both Deployments.
func plainEnv(d *appsv1.Deployment) []string {
	var out []string
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom == nil {
			out = append(out, e.Name+"="+e.Value)
		}
	}
	return out
}
