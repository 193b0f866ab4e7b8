package main

import (
	"strings"
	"testing"

	"github.com/ferry-mc/ferry/internal/testing/flagdoc"
)

// The README's tables of ferry-hub's flags, and of `ferry-hub clusters add` and `remove`, are the
// commands'.
func TestREADMEListsEveryFlag(t *testing.T) {
	cmd := newCommand()
	flagdoc.CheckREADME(t, "../../README.md", "ferry-hub", flagdoc.Table(cmd.Flags()))
	for _, sub := range []string{"add", "remove"} {
		c, _, err := cmd.Find([]string{"clusters", sub})
		if err != nil {
			t.Fatal(err)
		}
		flagdoc.CheckREADME(t, "../../README.md", "ferry-hub clusters "+sub, flagdoc.Table(c.Flags()))
	}
}

// Shard flags outside what they can mean stop ferry-hub before it connects anywhere, with an error
// naming the flag; a valid split passes on to the next check.
func TestShardFlagsAreValidated(t *testing.T) {
	cases := []struct {
		args []string
		want string // the flag the error must name
	}{
		{[]string{"--shard-count=0"}, "--shard-count 0"},
		{[]string{"--shard-count=-2"}, "--shard-count -2"},
		{[]string{"--shard-index=2", "--shard-count=2"}, "--shard-index 2"},
		{[]string{"--shard-index=-1", "--shard-count=3"}, "--shard-index -1"},
		{[]string{"--shard-index=1"}, "--shard-index 1"}, // one shard only has index 0
		// A valid split is accepted: the error comes from the next flag checked.
		{[]string{"--shard-index=1", "--shard-count=2", "--workers=0"}, "--workers 0"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			cmd := newCommand()
			cmd.SetArgs(c.args)
			err := cmd.ExecuteContext(t.Context())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ferry-hub %s: error %v, want one naming %q", strings.Join(c.args, " "), err, c.want)
			}
		})
	}
}
