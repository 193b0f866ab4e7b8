package deployrunner

import (
	"fmt"
	"os/exec"

	corev1 "k8s.io/api/core/v1"
)

// Process says how to run an install's Deployment as a process on this machine.
type Process struct {
	// Binary is the executable that stands in for the container's image.
	Binary string
	// Fields are the values of the pod fields the container's env reads with fieldRef, by field path
	// (see PodFields). A fieldRef without a value here is an error.
	Fields map[string]string
	// Overrides change the flags where this machine differs from a pod (see Override).
	Overrides []Override
}

// Command returns the command that runs the Deployment's container as p says: the container's args
// with $(VAR) expanded from its env, p's overrides applied, and exactly the container's env as the
// process's environment — nothing of the caller's, as nothing of the node's reaches a container.
func (in *Install) Command(p Process) (*exec.Cmd, error) {
	c, err := in.container()
	if err != nil {
		return nil, err
	}
	env, err := ResolveEnv(c, p.Fields)
	if err != nil {
		return nil, fmt.Errorf("%s: Deployment %s: %w", in.Dir, in.Deployment.Name, err)
	}
	args, err := ApplyOverrides(expandAll(c.Args, env), p.Overrides)
	if err != nil {
		return nil, fmt.Errorf("%s: Deployment %s: %w", in.Dir, in.Deployment.Name, err)
	}
	cmd := exec.Command(p.Binary, args...)
	cmd.Env = make([]string, 0, len(env)) // non-nil: a nil Env would pass on the caller's
	for _, e := range env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	return cmd, nil
}

// container returns the Deployment's one container; a command, which would replace the image's
// entrypoint that Binary stands in for, is refused.
func (in *Install) container() (corev1.Container, error) {
	containers := in.Deployment.Spec.Template.Spec.Containers
	if len(containers) != 1 {
		return corev1.Container{}, fmt.Errorf("%s: Deployment %s has %d containers, want one", in.Dir, in.Deployment.Name, len(containers))
	}
	c := containers[0]
	if len(c.Command) > 0 {
		return corev1.Container{}, fmt.Errorf("%s: Deployment %s: container %s sets command %q; only args are supported", in.Dir, in.Deployment.Name, c.Name, c.Command)
	}
	return c, nil
}
