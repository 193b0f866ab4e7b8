package deployrunner

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PodFields are the downward-API values of a pod named name in namespace, by field path, for
// ResolveEnv: what the kubelet gives env entries with a fieldRef.
func PodFields(namespace, name string) map[string]string {
	return map[string]string{"metadata.namespace": namespace, "metadata.name": name}
}

// ResolveEnv returns the container's env with every value resolved as the kubelet resolves it: in
// order, a literal value with its $(VAR) references to earlier entries expanded, and a fieldRef
// looked up in fields (field path → value). Any other source (Secret, ConfigMap, resource field,
// envFrom) is an error: a process on this machine has no pod to read it from, and dropping it would
// run something other than what ships.
func ResolveEnv(c corev1.Container, fields map[string]string) ([]corev1.EnvVar, error) {
	if len(c.EnvFrom) > 0 {
		return nil, fmt.Errorf("container %s: envFrom is not supported outside a pod", c.Name)
	}
	resolved := make([]corev1.EnvVar, 0, len(c.Env))
	known := map[string]string{}
	for _, e := range c.Env {
		var value string
		switch {
		case e.ValueFrom == nil:
			value = Expand(e.Value, known)
		case e.ValueFrom.FieldRef != nil:
			v, ok := fields[e.ValueFrom.FieldRef.FieldPath]
			if !ok {
				return nil, fmt.Errorf("container %s: env %s: no value for the pod field %q", c.Name, e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
			value = v
		default:
			return nil, fmt.Errorf("container %s: env %s: only literal values and fieldRef are supported outside a pod", c.Name, e.Name)
		}
		known[e.Name] = value
		resolved = append(resolved, corev1.EnvVar{Name: e.Name, Value: value})
	}
	return resolved, nil
}

// ExpandArgs returns the container's args with $(VAR) expanded from its env, resolved by ResolveEnv
// from fields, as the kubelet expands them.
func ExpandArgs(c corev1.Container, fields map[string]string) ([]string, error) {
	env, err := ResolveEnv(c, fields)
	if err != nil {
		return nil, err
	}
	return expandAll(c.Args, env), nil
}

func expandAll(args []string, env []corev1.EnvVar) []string {
	vars := make(map[string]string, len(env))
	for _, e := range env {
		vars[e.Name] = e.Value // a later entry of the same name wins, as in a pod
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = Expand(a, vars)
	}
	return out
}

// Expand expands the references $(NAME) in s from vars with the kubelet's rules: "$$" is a literal
// "$" (so "$$(NAME)" stays "$(NAME)"), a reference to a name vars lacks is left as written, and so is
// a "$(" that is never closed.
func Expand(s string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
