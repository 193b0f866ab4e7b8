package deployrunner

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestExpandFollowsTheKubeletsRules(t *testing.T) {
	vars := map[string]string{"NS": "ferry-system", "NAME": "ferry-hub-0", "EMPTY": ""}
	for _, tc := range []struct {
		name, in, want string
	}{
		{"a reference", "--leader-election-namespace=$(NS)", "--leader-election-namespace=ferry-system"},
		{"two references", "$(NS)/$(NAME)", "ferry-system/ferry-hub-0"},
		{"a reference to an empty value", "x$(EMPTY)y", "xy"},
		{"an unknown name stays as written", "--x=$(MISSING)", "--x=$(MISSING)"},
		{"$$ escapes a reference", "$$(NS)", "$(NS)"},
		{"$$ is one $", "a$$b", "a$b"},
		{"a lone $ stays", "cost $5", "cost $5"},
		{"a trailing $ stays", "x$", "x$"},
		{"an unclosed reference stays", "$(NS", "$(NS"},
		{"an unclosed reference before a closed one", "$($(NS)", "$($(NS)"},
		{"nothing to expand", "--metrics-bind-address=:8080", "--metrics-bind-address=:8080"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Expand(tc.in, vars); got != tc.want {
				t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func fieldRef(path string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
}

func TestExpandArgsResolvesTheEnvAsAPodWould(t *testing.T) {
	fields := PodFields("ferry-agent", "ferry-agent-cluster1")
	for _, tc := range []struct {
		name    string
		c       corev1.Container
		want    []string
		wantErr string
	}{{
		name: "downward API and literal values",
		c: corev1.Container{
			Args: []string{"--ns=$(POD_NAMESPACE)", "--id=$(POD_NAME)", "--level=$(LEVEL)"},
			Env: []corev1.EnvVar{
				{Name: "POD_NAMESPACE", ValueFrom: fieldRef("metadata.namespace")},
				{Name: "POD_NAME", ValueFrom: fieldRef("metadata.name")},
				{Name: "LEVEL", Value: "2"},
			},
		},
		want: []string{"--ns=ferry-agent", "--id=ferry-agent-cluster1", "--level=2"},
	}, {
		name: "a value refers to earlier entries only",
		c: corev1.Container{
			Args: []string{"--a=$(A)", "--b=$(B)"},
			Env: []corev1.EnvVar{
				{Name: "A", Value: "lease-$(POD_NAMESPACE)-$(B)"},
				{Name: "POD_NAMESPACE", ValueFrom: fieldRef("metadata.namespace")},
				{Name: "B", Value: "$(POD_NAMESPACE)"},
			},
		},
		want: []string{"--a=lease-$(POD_NAMESPACE)-$(B)", "--b=ferry-agent"},
	}, {
		name: "a later entry of the same name wins",
		c: corev1.Container{
			Args: []string{"--x=$(X)"},
			Env:  []corev1.EnvVar{{Name: "X", Value: "first"}, {Name: "X", Value: "second"}},
		},
		want: []string{"--x=second"},
	}, {
		name:    "a field the caller gives no value for",
		c:       corev1.Container{Name: "agent", Env: []corev1.EnvVar{{Name: "NODE", ValueFrom: fieldRef("spec.nodeName")}}},
		wantErr: `env NODE: no value for the pod field "spec.nodeName"`,
	}, {
		name: "a Secret",
		c: corev1.Container{Env: []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}}},
		wantErr: "env TOKEN: only literal values and fieldRef",
	}, {
		name:    "envFrom",
		c:       corev1.Container{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{}}}},
		wantErr: "envFrom is not supported",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ExpandArgs(tc.c, fields)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ExpandArgs = %q, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("ExpandArgs = %q, want %q", got, tc.want)
			}
		})
	}
}
