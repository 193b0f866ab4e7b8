package main

import (
	"testing"

	"github.com/ferry-mc/ferry/internal/flagdoc"
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
