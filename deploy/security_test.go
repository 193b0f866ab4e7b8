package deploy

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// imageNames are the images hack/image builds, one per binary, by Deployment name.
var imageNames = map[string]string{
	"ferry-hub":   "ferry.io/ferry-hub",
	"ferry-agent": "ferry.io/ferry-agent",
}

// nonRootUser is the numeric user of the images (distroless "nonroot").
const nonRootUser = 65532

// Every Deployment runs as deploy/README.md promises: the restricted Pod Security Standard (non-root
// with a numeric user, no privilege escalation, every capability dropped, seccomp RuntimeDefault), a
// read-only root filesystem, nothing from the host, Ferry's image by a retaggable name, and resource
// requests with a memory limit.
func TestDeploymentsAreLockedDown(t *testing.T) {
	for _, in := range installs {
		t.Run(in.dir, func(t *testing.T) {
			_, objs := render(t, in.dir)
			deployments := ofKind[appsv1.Deployment](t, objs, "Deployment")
			if len(deployments) != 1 {
				t.Fatalf("deploy/%s renders %d Deployments, want 1", in.dir, len(deployments))
			}
			for _, d := range deployments {
				checkPodSecurity(t, d)
				checkImages(t, d)
				checkResources(t, d)
			}
		})
	}
}

func checkPodSecurity(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	spec := d.Spec.Template.Spec
	pod := spec.SecurityContext
	if pod == nil {
		t.Fatalf("Deployment %s has no pod securityContext", d.Name)
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		t.Errorf("Deployment %s shares the host's network, PID or IPC namespace", d.Name)
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			t.Errorf("Deployment %s mounts the host path %s", d.Name, v.HostPath.Path)
		}
	}
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		sc := c.SecurityContext
		if sc == nil {
			t.Errorf("container %s of %s has no securityContext", c.Name, d.Name)
			continue
		}
		if runAsNonRoot := firstSet(sc.RunAsNonRoot, pod.RunAsNonRoot); runAsNonRoot == nil || !*runAsNonRoot {
			t.Errorf("container %s of %s: runAsNonRoot is not true", c.Name, d.Name)
		}
		if user := firstSet(sc.RunAsUser, pod.RunAsUser); user == nil || *user != nonRootUser {
			t.Errorf("container %s of %s: runAsUser is %v, want %d (the images' numeric non-root user)", c.Name, d.Name, deref(user), nonRootUser)
		}
		if sc.Privileged != nil && *sc.Privileged {
			t.Errorf("container %s of %s is privileged", c.Name, d.Name)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("container %s of %s: allowPrivilegeEscalation is not false", c.Name, d.Name)
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("container %s of %s: readOnlyRootFilesystem is not true", c.Name, d.Name)
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("container %s of %s does not drop ALL capabilities", c.Name, d.Name)
		} else if len(sc.Capabilities.Add) > 0 {
			t.Errorf("container %s of %s adds capabilities %v", c.Name, d.Name, sc.Capabilities.Add)
		}
		seccomp := firstSet(sc.SeccompProfile, pod.SeccompProfile)
		if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("container %s of %s: seccompProfile is %v, want RuntimeDefault", c.Name, d.Name, deref(seccomp))
		}
	}
}

// checkImages: each container runs Ferry's image for its Deployment, by the name the kustomization's
// images entry retags, with a tag that IfNotPresent keeps (an image loaded into kind with
// `kind load` is never pulled).
func checkImages(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	want, ok := imageNames[d.Name]
	if !ok {
		t.Fatalf("Deployment %s is none of Ferry's: %v", d.Name, imageNames)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		name, tag, _ := strings.Cut(c.Image, ":")
		if name != want {
			t.Errorf("container %s of %s runs image %q, want %s:<version>", c.Name, d.Name, c.Image, want)
		}
		if tag == "" || tag == "latest" {
			t.Errorf("container %s of %s runs image %q: want a version tag, set by the kustomization's images entry", c.Name, d.Name, c.Image)
		}
		if c.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("container %s of %s: imagePullPolicy is %q, want IfNotPresent", c.Name, d.Name, c.ImagePullPolicy)
		}
	}
}

func checkResources(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := c.Resources.Requests[r]; !ok || q.IsZero() {
				t.Errorf("container %s of %s requests no %s", c.Name, d.Name, r)
			}
		}
		limit, ok := c.Resources.Limits[corev1.ResourceMemory]
		if !ok || limit.IsZero() {
			t.Errorf("container %s of %s has no memory limit", c.Name, d.Name)
			continue
		}
		checkGoMemLimit(t, d, c, limit)
	}
}

// checkGoMemLimit checks that the Go runtime is told of the container's memory limit, a margin below
// it: without GOMEMLIMIT the heap may double its live size before a collection, past the limit.
func checkGoMemLimit(t *testing.T, d *appsv1.Deployment, c corev1.Container, limit resource.Quantity) {
	t.Helper()
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "GOMEMLIMIT" })
	if i < 0 {
		t.Errorf("container %s of %s sets no GOMEMLIMIT below its memory limit %s", c.Name, d.Name, limit.String())
		return
	}
	v := c.Env[i].Value
	bytes, err := goMemLimitBytes(v)
	if err != nil {
		t.Errorf("container %s of %s: GOMEMLIMIT %q: %v", c.Name, d.Name, v, err)
		return
	}
	if ratio := float64(bytes) / limit.AsApproximateFloat64(); ratio < 0.75 || ratio > 0.95 {
		t.Errorf("container %s of %s: GOMEMLIMIT %s is %.0f%% of its memory limit %s, want 75–95%%", c.Name, d.Name, v, 100*ratio, limit.String())
	}
}

func firstSet[T any](values ...*T) *T {
	for _, v := range values {
		if v != nil {
			return v
		}
	}
	return nil
}

func deref[T any](v *T) any {
	if v == nil {
		return "unset"
	}
	return *v
}

// goMemLimitBytes reads a GOMEMLIMIT value as the Go runtime does: an integer and a unit among B,
// KiB, MiB, GiB and TiB (none is bytes).
func goMemLimitBytes(v string) (int64, error) {
	for i, unit := range []string{"TiB", "GiB", "MiB", "KiB", "B"} {
		if n, ok := strings.CutSuffix(v, unit); ok {
			q, err := strconv.ParseInt(n, 10, 64)
			return q << (10 * (4 - i)), err
		}
	}
	return strconv.ParseInt(v, 10, 64)
}
