package deployrunner

import (
	"slices"
	"strings"
	"testing"
)

func TestApplyOverrides(t *testing.T) {
	shipped := []string{"--leader-elect", "--health-probe-bind-address=:8081", "--metrics-bind-address=:8080"}
	for _, tc := range []struct {
		name      string
		args      []string
		overrides []Override
		want      []string
		wantErr   string
	}{{
		name:      "bind addresses on a shared host",
		args:      shipped,
		overrides: []Override{Set("health-probe-bind-address", "127.0.0.1:40001"), Set("metrics-bind-address", "127.0.0.1:40002")},
		want:      []string{"--leader-elect", "--health-probe-bind-address=127.0.0.1:40001", "--metrics-bind-address=127.0.0.1:40002"},
	}, {
		name:      "a kubeconfig in place of the in-cluster configuration is added",
		args:      shipped,
		overrides: []Override{Add("kubeconfig", "/tmp/hub.kubeconfig")},
		want:      append(slices.Clone(shipped), "--kubeconfig=/tmp/hub.kubeconfig"),
	}, {
		name:      "Add replaces a flag the args carry",
		args:      []string{"--hub-kubeconfig-dir=/spoke/hub-kubeconfig"},
		overrides: []Override{Add("hub-kubeconfig-dir", "/work/.local/c1/hub-kubeconfig")},
		want:      []string{"--hub-kubeconfig-dir=/work/.local/c1/hub-kubeconfig"},
	}, {
		name:      "a boolean flag gets a value",
		args:      shipped,
		overrides: []Override{Set("leader-elect", "false")},
		want:      []string{"--leader-elect=false", "--health-probe-bind-address=:8081", "--metrics-bind-address=:8080"},
	}, {
		name:      "every occurrence is replaced",
		args:      []string{"--workers=2", "--workers=4"},
		overrides: []Override{Set("workers", "1")},
		want:      []string{"--workers=1", "--workers=1"},
	}, {
		name:      "a single-dash flag",
		args:      []string{"-v=2"},
		overrides: []Override{Set("v", "4")},
		want:      []string{"--v=4"},
	}, {
		name:      "a flag renamed in deploy/ fails loudly",
		args:      []string{"--health-probe-bind-addr=:8081"},
		overrides: []Override{Set("health-probe-bind-address", "127.0.0.1:40001")},
		wantErr:   "override of --health-probe-bind-address: the args",
	}, {
		name:      "a prefix is not the flag",
		args:      []string{"--metrics-bind-address-v2=:8080"},
		overrides: []Override{Set("metrics-bind-address", "127.0.0.1:1")},
		wantErr:   "do not carry it",
	}, {
		name:      "positional arguments after -- are not flags",
		args:      []string{"--", "--workers=2"},
		overrides: []Override{Set("workers", "1")},
		wantErr:   "do not carry it",
	}, {
		name:      "a value in a separate argument is ambiguous",
		args:      []string{"--metrics-bind-address", ":8080"},
		overrides: []Override{Set("metrics-bind-address", "127.0.0.1:1")},
		wantErr:   "as a separate argument",
	}, {
		name:      "the same flag twice",
		args:      shipped,
		overrides: []Override{Set("leader-elect", "true"), Add("leader-elect", "false")},
		wantErr:   "given twice",
	}, {
		name:      "a flag name with dashes",
		args:      shipped,
		overrides: []Override{Set("--leader-elect", "true")},
		wantErr:   "without dashes",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.args)
			got, err := ApplyOverrides(tc.args, tc.overrides)
			if !slices.Equal(tc.args, before) {
				t.Errorf("ApplyOverrides changed its input to %q", tc.args)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ApplyOverrides = %q, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("ApplyOverrides = %q, want %q", got, tc.want)
			}
		})
	}
}
