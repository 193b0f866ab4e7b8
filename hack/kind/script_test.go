package kind

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ferry-mc/ferry/internal/testing/deployrunner"
	"github.com/ferry-mc/ferry/internal/testing/gobuild"
	"github.com/ferry-mc/ferry/internal/testing/localcluster"
)

// repoRoot is the checkout this file is in.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func script(t *testing.T) string { return filepath.Join(repoRoot(t), "hack", "kind", "e2e.sh") }

// lookPath fails the test naming how to install what is missing: these tests never skip.
func lookPath(t *testing.T, tool, install string) string {
	t.Helper()
	path, err := exec.LookPath(tool)
	if err != nil {
		t.Fatalf("%s is not installed: %s (.ci/run installs it)", tool, install)
	}
	return path
}

func kubectl(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	cmd := exec.Command(lookPath(t, "kubectl", "apt-get install kubectl"), args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// withoutVars is os.Environ() less the named variables, so a developer's own settings cannot leak in.
func withoutVars(names ...string) []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(names, name)
	})
}

var scriptVars = []string{"HUB_KUBECONFIG", "SPOKE1_KUBECONFIG", "SPOKE2_KUBECONFIG", "FERRY_KIND_DRY_RUN",
	"FERRY_KIND_DIR", "FERRY_KIND_BIN_DIR", "KIND_NODE_IMAGE", "FERRY_E2E_HUB_KUBECONFIG", "FERRY_E2E_SPOKE_KUBECONFIGS"}

// runScript runs e2e.sh with bash and returns its exit error and what it printed (stdout and stderr
// interleaved, as a person sees them). The deadline catches a hung script, with room for the script's
// own build of ferry-hub from a cold cache on a 2-core machine busy with other packages' tests.
func runScript(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, lookPath(t, "bash", "apt-get install bash"), append([]string{script(t)}, args...)...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// shellWords writes args as a shell command line would: a word with a space quoted after its "=".
func shellWords(args []string) string {
	words := make([]string, len(args))
	for i, a := range args {
		if name, value, ok := strings.Cut(a, "="); ok && strings.Contains(value, " ") {
			a = name + "='" + value + "'"
		}
		words[i] = a
	}
	return strings.Join(words, " ")
}

// decodeObjects reads every object of a YAML stream.
func decodeObjects(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	objs, err := deployrunner.DecodeObjects(data)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// printedName is how kubectl apply names an object in its output: kind.group/name, lower case.
func printedName(o *unstructured.Unstructured) string {
	gk := o.GroupVersionKind().GroupKind()
	return strings.ToLower(gk.String()) + "/" + o.GetName()
}

var serverDryRunLine = regexp.MustCompile(`(?m)^(\S+) (?:created|configured|unchanged) \(server dry run\)$`)

// Without Docker the script still proves what matters on clusters that exist: every manifest it
// would apply is accepted by a real API server of its kind of cluster (hub or spoke), the spokes are
// registered for real — the Secret the agent needs is on each spoke — and the kind and docker steps
// are only printed, with each image going to the clusters that run it. Nothing it applies persists.
func TestDryRunInstallsAndRegistersOnExistingClusters(t *testing.T) {
	root := repoRoot(t)
	// The hub runs kube-controller-manager, as a kind hub does: it fills the token Secret of the
	// agent's ServiceAccount that the registration waits for.
	env := localcluster.StartForTest(t, localcluster.Options{
		Hub:    localcluster.ClusterSpec{ControllerManager: true},
		Spokes: []localcluster.ClusterSpec{{Name: "cluster1"}, {Name: "cluster2"}},
	})
	hub, spokes := env.Hub, env.Spokes

	// A server dry run creates no namespace, so the objects inside a new one would be refused; an
	// existing hub has ferry-system from its first install. (ferry-agent on the spokes is made for
	// real by the registration before the agent's install.)
	kubectl(t, nil, "--kubeconfig", hub.Kubeconfig, "create", "namespace", "ferry-system")

	// kind, docker and make images need a Docker daemon: in a dry run none of them may run.
	stubs := t.TempDir()
	ran := filepath.Join(t.TempDir(), "ran")
	for _, tool := range []string{"kind", "docker", "make"} {
		stub := fmt.Sprintf("#!/bin/sh\necho \"%s $*\" >>%q\nexit 1\n", tool, ran)
		if err := os.WriteFile(filepath.Join(stubs, tool), []byte(stub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out, err := runScript(t, append(withoutVars(scriptVars...),
		"PATH="+stubs+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HUB_KUBECONFIG="+hub.Kubeconfig,
		"SPOKE1_KUBECONFIG="+spokes[0].Kubeconfig,
		"SPOKE2_KUBECONFIG="+spokes[1].Kubeconfig,
		"FERRY_KIND_BIN_DIR="+t.TempDir(),
		"FERRY_KIND_DIR="+t.TempDir(),
	), "--dry-run")
	if err != nil {
		t.Fatalf("e2e.sh --dry-run: %v\n%s", err, out)
	}
	t.Logf("e2e.sh --dry-run:\n%s", out)
	// ferry-hub is built as the images build it: the same binary, and on a cold CI run the same build
	// cache as the other builds of it (a build with other flags compiled the whole graph again, past
	// this test's deadline).
	if want := "CGO_ENABLED=0 go build " + shellWords(gobuild.Flags) + " -o "; !strings.Contains(out, want) {
		t.Errorf("e2e.sh does not build ferry-hub with %q", want)
	}
	if data, err := os.ReadFile(ran); err == nil {
		t.Errorf("the dry run ran Docker-host tools:\n%s", data)
	}

	// Each object of each install, once per cluster it goes to, was accepted by a server dry run.
	hubInstall := decodeObjects(t, []byte(kubectl(t, nil, "kustomize", filepath.Join(root, "deploy/hub"))))
	agentRole, err := os.ReadFile(filepath.Join(root, "deploy/agent/hub-clusterrole.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	hubObjs := append(slices.Clone(hubInstall), decodeObjects(t, agentRole)...)
	spokeObjs := decodeObjects(t, []byte(kubectl(t, nil, "kustomize", filepath.Join(root, "deploy/agent/spoke"))))
	want := map[string]int{}
	for _, o := range hubObjs {
		want[printedName(o)]++
	}
	for _, o := range spokeObjs {
		want[printedName(o)] += len(spokes)
	}
	got := map[string]int{}
	for _, m := range serverDryRunLine.FindAllStringSubmatch(out, -1) {
		got[m[1]]++
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if got[name] != want[name] {
			t.Errorf("%s accepted by a server dry run %d times, want %d (once per cluster it is installed on)", name, got[name], want[name])
		}
	}
	for _, name := range []string{"deployment.apps/ferry-hub", "deployment.apps/ferry-agent", "clusterrole.rbac.authorization.k8s.io/ferry:agent"} {
		if want[name] == 0 {
			t.Errorf("the installs no longer hold %s: update this test", name)
		}
	}

	// A dry run keeps nothing: none of the installs' objects exist but the namespaces (made above and
	// by the registration) and the CRDs (installed by localcluster). The agents' ClusterRole is not
	// looked for: the registration makes it for real before it binds the agents' credentials to it.
	assertNoneExist(t, hub.Kubeconfig, hubInstall)
	for _, s := range spokes {
		assertNoneExist(t, s.Kubeconfig, spokeObjs)
	}

	// The Docker-host steps are shown, not run: each archive is checked to name the image the
	// install's Deployment runs and goes to the clusters that run it, and the suite is pointed at the
	// clusters by the variables test/e2e reads.
	for _, step := range []string{
		"kind create cluster --name ferry-hub --image kindest/node:v1.35.",
		"kind create cluster --name ferry-cluster1 --image kindest/node:v1.35.",
		"kind create cluster --name ferry-cluster2 --image kindest/node:v1.35.",
		"make -C " + root + " images\n",
		"kind load image-archive " + root + "/bin/images/ferry-hub.tar --name ferry-hub\n",
		"kind load image-archive " + root + "/bin/images/ferry-agent.tar --name ferry-cluster1\n",
		"kind load image-archive " + root + "/bin/images/ferry-agent.tar --name ferry-cluster2\n",
		"check that ferry-hub.tar names " + imageOf(t, hubObjs, "ferry-hub") + "\n",
		"check that ferry-agent.tar names " + imageOf(t, spokeObjs, "ferry-agent") + "\n",
		"FERRY_E2E_HUB_KUBECONFIG=" + hub.Kubeconfig + " FERRY_E2E_SPOKE_KUBECONFIGS=cluster1=" + spokes[0].Kubeconfig + ",cluster2=" + spokes[1].Kubeconfig +
			" go test -count=1 -timeout 20m ./test/e2e/ -run ^TestApplicationAndManifestWorkThroughTheRealBinaries$",
	} {
		if !strings.Contains(out, "[dry run, not run] "+step) {
			t.Errorf("the dry run does not show the step %q", step)
		}
	}
	for _, wrong := range []string{"ferry-agent.tar --name ferry-hub", "ferry-hub.tar --name ferry-cluster"} {
		if strings.Contains(out, wrong) {
			t.Errorf("an image goes to a cluster that does not run it: %q", wrong)
		}
	}
	// The archives of make images already carry the tag deploy/ runs (hack/image checks that they
	// do): loading them is the whole step, as it is for a user, with nothing re-tagged on the nodes.
	if steps := regexp.MustCompile(`(?m)^\[dry run, not run\] docker .*$`).FindAllString(out, -1); len(steps) > 0 {
		t.Errorf("the dry run shows docker steps beside kind load; a user's `kind load image-archive` is all it takes:\n%s", strings.Join(steps, "\n"))
	}

	hubServer := serverOf(t, hub.Kubeconfig)
	managedClusters := dynamicClient(t, hub.Kubeconfig).Resource(schema.GroupVersionResource{
		Group: "cluster.open-cluster-management.io", Version: "v1", Resource: "managedclusters"})
	for _, s := range spokes {
		if _, err := managedClusters.Get(t.Context(), s.Name, metav1.GetOptions{}); err != nil {
			t.Errorf("ManagedCluster %s on the hub: %v", s.Name, err)
		}
		assertAgentCredential(t, s, hubServer)
	}
}

// imageOf is the image the Deployment name of objs runs.
func imageOf(t *testing.T, objs []*unstructured.Unstructured, name string) string {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Deployment" || o.GetName() != name {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if len(containers) > 0 {
			if image, ok := containers[0].(map[string]any)["image"].(string); ok {
				return image
			}
		}
	}
	t.Fatalf("no Deployment %s with an image in the install", name)
	return ""
}

// assertNoneExist fails for each of objs, but Namespaces and CRDs, that exists on the cluster.
func assertNoneExist(t *testing.T, kubeconfig string, objs []*unstructured.Unstructured) {
	t.Helper()
	var docs bytes.Buffer
	for _, o := range objs {
		if k := o.GetKind(); k == "Namespace" || k == "CustomResourceDefinition" {
			continue
		}
		data, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(data)
		docs.WriteString("\n")
	}
	if left := strings.TrimSpace(kubectl(t, docs.Bytes(), "--kubeconfig", kubeconfig, "get", "-f", "-", "--ignore-not-found", "-o", "name")); left != "" {
		t.Errorf("the dry run left objects on %s:\n%s", kubeconfig, left)
	}
}

// assertAgentCredential checks what the agent on spoke s mounts: the Secret hub-kubeconfig-secret
// in ferry-agent, naming the cluster and holding a kubeconfig for the hub that the hub accepts as a
// ServiceAccount of the cluster's namespace.
func assertAgentCredential(t *testing.T, s *localcluster.Cluster, hubServer string) {
	t.Helper()
	client, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	secret, err := client.CoreV1().Secrets("ferry-agent").Get(t.Context(), "hub-kubeconfig-secret", metav1.GetOptions{})
	if err != nil {
		t.Errorf("%s: the agent's hub credential: %v", s.Name, err)
		return
	}
	if got := string(secret.Data["cluster-name"]); got != s.Name {
		t.Errorf("%s: hub-kubeconfig-secret cluster-name %q, want %q", s.Name, got, s.Name)
	}
	kubeconfig, ok := secret.Data["kubeconfig"]
	if !ok {
		t.Errorf("%s: hub-kubeconfig-secret has no key kubeconfig (keys %v)", s.Name, slices.Sorted(maps.Keys(secret.Data)))
		return
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Errorf("%s: hub-kubeconfig-secret kubeconfig: %v", s.Name, err)
		return
	}
	if cfg.Host != hubServer {
		t.Errorf("%s: the agent's kubeconfig reaches the hub at %q, want the --hub-server %q", s.Name, cfg.Host, hubServer)
	}
	asAgent, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := asAgent.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Errorf("%s: the hub does not accept the agent's credential: %v", s.Name, err)
		return
	}
	if user := review.Status.UserInfo.Username; !strings.HasPrefix(user, "system:serviceaccount:"+s.Name+":") {
		t.Errorf("%s: the agent's credential is %q on the hub, want a ServiceAccount of namespace %s", s.Name, user, s.Name)
	}
}

func serverOf(t *testing.T, kubeconfig string) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Host
}

func dynamicClient(t *testing.T, kubeconfig string) dynamic.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

// A person without the tools is told each one that is missing and where to get it, before anything
// runs; a dry run without the clusters' kubeconfigs says which to set.
func TestMissingToolsAndKubeconfigsAreNamed(t *testing.T) {
	t.Run("no tools", func(t *testing.T) {
		out, err := runScript(t, append(withoutVars(append(scriptVars, "PATH")...), "PATH="+t.TempDir()), "up")
		if err == nil {
			t.Fatalf("e2e.sh up succeeded without docker, kind or kubectl:\n%s", out)
		}
		for _, hint := range []string{"docker: install Docker Engine", "kind: go install sigs.k8s.io/kind@v", "kubectl: apt-get install kubectl", "--dry-run"} {
			if !strings.Contains(out, hint) {
				t.Errorf("e2e.sh up without tools does not say %q:\n%s", hint, out)
			}
		}
	})
	t.Run("docker without a daemon", func(t *testing.T) {
		// The docker client alone, as on these machines: the script must say the daemon is missing
		// before kind tries to create anything.
		stubs := t.TempDir()
		for tool, stub := range map[string]string{"docker": "#!/bin/sh\nexit 1\n", "kind": "#!/bin/sh\necho \"kind $*\" >&2\nexit 1\n"} {
			if err := os.WriteFile(filepath.Join(stubs, tool), []byte(stub), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		out, err := runScript(t, append(withoutVars(append(scriptVars, "PATH")...),
			"PATH="+stubs+string(os.PathListSeparator)+os.Getenv("PATH")), "up")
		if err == nil || !strings.Contains(out, "no Docker daemon answers") || strings.Contains(out, "kind ") {
			t.Errorf("e2e.sh up with a docker client and no daemon (err %v) does not stop at saying so:\n%s", err, out)
		}
	})
	t.Run("dry run without kubeconfigs", func(t *testing.T) {
		out, err := runScript(t, append(withoutVars(scriptVars...), "FERRY_KIND_DRY_RUN=1"), "up")
		if err == nil {
			t.Fatalf("a dry run without kubeconfigs succeeded:\n%s", out)
		}
		if !strings.Contains(out, "HUB_KUBECONFIG, SPOKE1_KUBECONFIG and SPOKE2_KUBECONFIG") {
			t.Errorf("a dry run without kubeconfigs does not name the variables to set:\n%s", out)
		}
	})
}

// Every shell script of the repository passes shellcheck, the kind path's among them.
func TestShellScriptsPassShellcheck(t *testing.T) {
	shellcheck := lookPath(t, "shellcheck", "apt-get install shellcheck")
	root := repoRoot(t)
	var scripts []string
	for _, dir := range []string{"hack", "deploy"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".sh") {
				scripts = append(scripts, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Contains(scripts, script(t)) {
		t.Fatalf("found %v, not %s", scripts, script(t))
	}
	out, err := exec.Command(shellcheck, scripts...).CombinedOutput()
	if err != nil {
		t.Errorf("shellcheck %s: %v\n%s", strings.Join(scripts, " "), err, out)
	}
}
